import type { Config } from '@trawl/config';
import type { Logger } from '@trawl/telemetry';
import { Runtime } from './runtime.js';
import { resolveServices } from './services.js';
import { CrawlWorker } from './worker.js';

export interface WorkerProcessReport {
  worker: number;
  drained: boolean;
  fetched: number;
  fetchErrors: number;
  retries: number;
  dead: number;
}

/**
 * A worker process from start to SIGTERM: find the servers (never embedded: a worker joins a
 * shared crawl), consume fetch jobs, and on `stopped` drain in-flight work and close.
 */
export async function runWorkerProcess(
  config: Readonly<Config>,
  options: { logger: Logger; dataDir: string; stopped: Promise<unknown> },
): Promise<WorkerProcessReport> {
  const { logger } = options;
  const services = await resolveServices(config, { dataDir: options.dataDir, logger, allowEmbedded: false });
  try {
    const runtime = await Runtime.open({ config, redisUrl: services.redisUrl, databaseUrl: services.databaseUrl, logger, role: 'worker' });
    try {
      const worker = new CrawlWorker(runtime, { concurrency: config.worker.concurrency });
      worker.start();
      logger.info({ namespace: config.namespace, concurrency: config.worker.concurrency }, 'worker started');
      await options.stopped;
      logger.info('stopping: draining in-flight jobs');
      const { drained } = await worker.stop(config.worker.drainTimeoutMs);
      logger.info({ drained }, 'worker stopped');
      const mine = runtime.counters.local;
      return { worker: process.pid, drained, fetched: mine.fetched, fetchErrors: mine.fetchErrors, retries: mine.retries, dead: mine.dead };
    } finally {
      await runtime.close();
    }
  } finally {
    await services.stop();
  }
}
