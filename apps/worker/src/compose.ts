import type { TrawlError } from '@trawl/core';
import { Acks, canonicalSitemapUrls, CrawlWorker, Records, UrlStates, Validators } from '@trawl/crawl';
import type { Config } from '@trawl/config';
import { Sitemaps } from '@trawl/db';
import type { Runtime } from '@trawl/runtime';

/** The sitemaps a robots.txt names; when it names none, /sitemap.xml if the crawl guesses it. */
function recordSitemaps(sitemaps: Sitemaps, config: Readonly<Config>, origin: string, urls: string[]): Promise<void> {
  if (!config.sitemaps.enabled) return Promise.resolve();
  if (urls.length > 0) return sitemaps.add(origin, canonicalSitemapUrls(urls), 'robots');
  return config.sitemaps.guess ? sitemaps.add(origin, [`${origin}/sitemap.xml`], 'guess') : Promise.resolve();
}

/** The fetch worker's object graph on a runtime: the pipeline, its batchers, one consumer per partition. */
export function createCrawlWorker(
  runtime: Runtime,
  options: { concurrency: number; partitions?: readonly number[]; onFatal?: (error: TrawlError) => void },
): CrawlWorker {
  const { config } = runtime;
  const partitions = options.partitions ?? Array.from({ length: config.partitions }, (_, p) => p);
  const sitemaps = new Sitemaps(runtime.db.pool, config.namespace);
  return new CrawlWorker(
    {
      frontier: runtime.frontier,
      fetcher: runtime.fetcher,
      store: runtime.store,
      robots: runtime.robots,
      discovery: runtime.discovery(),
      records: new Records(runtime.db, async () => {
        const policy = await runtime.policy.get();
        return policy?.policy.recrawl.enabled ? policy.recrawl : null;
      }),
      validators: new Validators(runtime.db),
      urlStates: new UrlStates(runtime.db),
      acks: new Acks(runtime.frontier),
      policy: runtime.policy,
      counters: runtime.counters,
      clock: runtime.clock,
      logger: runtime.logger.child({ component: 'worker' }),
      retry: { attempts: config.worker.attempts, timeoutAttempts: config.worker.timeoutAttempts, baseMs: config.worker.retryBaseMs, maxMs: config.worker.retryMaxMs },
      leaseMs: config.worker.leaseMs,
      // Twice per BullMQ lock: a job handed over while its first attempt still records waits for
      // three missed renewals, so a dead attempt's fetched pages come back about as fast as its jobs.
      renewEveryMs: Math.min(Math.floor(config.worker.leaseMs / 3), Math.floor(config.worker.stalledMs / 2)),
      gateWaitMs: Math.max(100, 4 * config.dispatch.leadMs),
      recordSitemaps: (origin, urls) => recordSitemaps(sitemaps, config, origin, urls),
      sitemaps: config.sitemaps.enabled
        ? { store: sitemaps, frontier: runtime.frontier, markQueued: (hashes) => runtime.db.markQueued(hashes), maxEntries: config.sitemaps.maxEntries }
        : undefined,
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
