import type { Config } from '@trawl/config';
import { Runtime, serveProcessMetrics } from '@trawl/runtime';
import { admissionMetrics, type Logger } from '@trawl/telemetry';
import { startSchedulerService } from './compose.js';

/**
 * A scheduler process from start to SIGTERM: open the crawl's servers, dispatch the partitions
 * it owns and consume seeds until `stopped`, then hand its partitions over and close.
 */
export async function runSchedulerProcess(
  config: Readonly<Config>,
  options: { logger: Logger; redisUrl: string; databaseUrl: string; stopped: Promise<unknown> },
): Promise<{ member: string }> {
  const runtime = await Runtime.open({ config, redisUrl: options.redisUrl, databaseUrl: options.databaseUrl, logger: options.logger, role: 'scheduler' });
  // Prometheus /metrics and /healthz on TRAWL_METRICS_PORT (closed with the runtime).
  const metrics = await serveProcessMetrics(runtime, 'scheduler').catch(async (error: unknown) => {
    await runtime.close();
    throw error;
  });
  try {
    const service = await startSchedulerService(runtime);
    admissionMetrics(metrics.metrics, () => service.admission.status);
    await options.stopped;
    options.logger.info('stopping: handing partitions over');
    await service.stop();
    return { member: service.scheduler.memberId };
  } finally {
    await metrics.close();
    await runtime.close();
  }
}
