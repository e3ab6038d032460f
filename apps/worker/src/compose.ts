import type { TrawlError } from '@trawl/core';
import { Acks, CrawlWorker, Records } from '@trawl/crawl';
import type { Runtime } from '@trawl/runtime';

/** The fetch worker's object graph on a runtime: the pipeline, its batchers, one consumer per partition. */
export function createCrawlWorker(
  runtime: Runtime,
  options: { concurrency: number; partitions?: readonly number[]; onFatal?: (error: TrawlError) => void },
): CrawlWorker {
  const { config } = runtime;
  const partitions = options.partitions ?? Array.from({ length: config.partitions }, (_, p) => p);
  return new CrawlWorker(
    {
      frontier: runtime.frontier,
      fetcher: runtime.fetcher,
      store: runtime.store,
      robots: runtime.robots,
      discovery: runtime.discovery(),
      records: new Records(runtime.db),
      acks: new Acks(runtime.frontier),
      policy: runtime.policy,
      counters: runtime.counters,
      clock: runtime.clock,
      logger: runtime.logger.child({ component: 'worker' }),
      retry: { attempts: config.worker.attempts, timeoutAttempts: config.worker.timeoutAttempts, baseMs: config.worker.retryBaseMs, maxMs: config.worker.retryMaxMs },
      leaseMs: config.worker.leaseMs,
      gateWaitMs: Math.max(100, 4 * config.dispatch.leadMs),
      recordSitemaps: async (origin, urls) => {
        const { rejected } = await runtime.db.recordSitemaps(origin, urls);
        if (rejected.length > 0) runtime.logger.warn({ origin, rejected }, 'PostgreSQL refused sitemap URLs; they are dropped');
      },
    },
    {
      connection: runtime.blockingRedis(),
      namespace: config.namespace,
      partitions,
      concurrency: options.concurrency,
      stalledMs: config.worker.stalledMs,
      logger: runtime.logger,
      onFatal: options.onFatal,
    },
  );
}
