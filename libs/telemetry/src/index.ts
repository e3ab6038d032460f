import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level: string;
  /** Process role, e.g. "worker", "dispatcher", "cli". */
  name: string;
  /** Where JSON lines go (default: stderr, so stdout stays for command output). */
  destination?: DestinationStream | NodeJS.WritableStream;
  base?: Record<string, unknown>;
}

/** JSON-lines logger. One per process; children per component (`logger.child({ component })`). */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      base: { pid: process.pid, ...options.base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    (options.destination as DestinationStream | undefined) ?? pino.destination({ fd: 2, sync: false }),
  );
}

/** A logger that drops everything (tests, library defaults). */
export const silentLogger: Logger = pino({ level: 'silent' });

export { type AdmissionReading, admissionMetrics, type Counter, type Gauge, hostsBlocked, Metrics, type MetricsServer, type MetricsServerOptions, pipelineEvents, proxyRequests, startMetricsServer } from './metrics.js';
