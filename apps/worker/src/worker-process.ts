import type { Config } from '@trawl/config';
import { lowerThreadPriority } from '@trawl/core';
import { Runtime, serveProcessMetrics } from '@trawl/runtime';
import type { Logger } from '@trawl/telemetry';
import { startWorkerService } from './compose.js';

export interface WorkerProcessReport {
  worker: number;
  drained: boolean;
  fetched: number;
  fetchErrors: number;
  retries: number;
  dead: number;
}

/**
 * A worker process from start to SIGTERM: open the crawl's servers (never embedded ones: a
 * worker joins a shared crawl), consume fetch jobs, and on `stopped` drain in-flight work and close.
 */
export async function runWorkerProcess(
  config: Readonly<Config>,
  options: { logger: Logger; redisUrl: string; databaseUrl: string; stopped: Promise<unknown> },
): Promise<WorkerProcessReport> {
  const { logger } = options;
  // A process-only worker never starts a fetch: all of it yields the cores to the processes
  // that do (TRAWL_PROCESS_NICE), its threads included (they inherit the main thread's value).
  if (!config.worker.roles.includes('fetch') && !config.worker.roles.includes('render')) lowerThreadPriority(config.process.nice);
  const runtime = await Runtime.open({ config, redisUrl: options.redisUrl, databaseUrl: options.databaseUrl, logger, role: 'worker' });
  // Prometheus /metrics and /healthz on TRAWL_METRICS_PORT (closed with the runtime).
  const metrics = await serveProcessMetrics(runtime, 'worker').catch(async (error: unknown) => {
    await runtime.close();
    throw error;
  });
  try {
    // A content store that cannot take bodies (a missing bucket, a read-only directory) stops the worker now, by name.
    await runtime.store.check();
    let onFatal: () => void = () => undefined;
    const fatal = new Promise<void>((resolve) => (onFatal = resolve));
    const service = await startWorkerService(runtime, { concurrency: config.worker.concurrency, onFatal: () => onFatal() });
    const { worker } = service;
    logger.info({ namespace: config.namespace, concurrency: config.worker.concurrency, partitions: worker.partitions }, 'worker started');
    await Promise.race([options.stopped, fatal]);
    logger.info('stopping: draining in-flight jobs');
    const { drained } = await service.stop(config.worker.drainTimeoutMs);
    logger.info({ drained }, 'worker stopped');
    // Stop with the fault's own message; the crawl resumes when a fixed worker starts again.
    if (worker.fatal) throw worker.fatal;
    const mine = runtime.counters.local;
    return { worker: process.pid, drained, fetched: mine.fetched, fetchErrors: mine.fetchErrors, retries: mine.retries, dead: mine.dead };
  } finally {
    await metrics.close();
    await runtime.close();
  }
}
