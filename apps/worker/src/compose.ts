import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { TrawlError } from '@trawl/core';
import { WorkerMembership } from '@trawl/dispatch';
import { Acks, canonicalSitemapUrls, CrawlArchive, CrawlWorker, Duplicates, Records, ThreadAnalyzer, UrlStates, Validators } from '@trawl/crawl';
import type { Config } from '@trawl/config';
import { NearDupIndex, Sitemaps } from '@trawl/db';
import { WarcWriter } from '@trawl/warc';
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
  const nearDup = new NearDupIndex(runtime.db);
  // One WARC writer per worker process: its files carry the host name and pid, and are finished when the worker stops.
  const archive = config.warc.write
    ? new CrawlArchive(new WarcWriter({ dir: config.warc.dir, prefix: config.warc.prefix, maxFileBytes: config.warc.maxFileBytes }), nearDup, runtime.store)
    : undefined;
  return new CrawlWorker(
    {
      frontier: runtime.frontier,
      fetcher: runtime.fetcher,
      store: runtime.store,
      robots: runtime.robots,
      discovery: runtime.discovery(),
      records: new Records(
        runtime.db,
        async () => {
          const policy = await runtime.policy.get();
          return policy?.policy.recrawl.enabled ? policy.recrawl : null;
        },
        runtime.frontier,
      ),
      validators: new Validators(runtime.db),
      duplicates: new Duplicates(nearDup, () => runtime.clock.now()),
      analyzer: new ThreadAnalyzer(runtime.logger.child({ component: 'analyzer' })),
      archive,
      urlStates: new UrlStates(runtime.db),
      acks: new Acks(runtime.frontier),
      policy: runtime.policy,
      counters: runtime.counters,
      clock: runtime.clock,
      logger: runtime.logger.child({ component: 'worker' }),
      retry: { attempts: config.worker.attempts, timeoutAttempts: config.worker.timeoutAttempts, robotsAttempts: config.robots.attempts, baseMs: config.worker.retryBaseMs, maxMs: config.worker.retryMaxMs },
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

export interface WorkerService {
  worker: CrawlWorker;
  membership: WorkerMembership;
  /** Stops taking jobs, drains (up to `timeoutMs`), and leaves the membership. */
  stop(timeoutMs: number): Promise<{ drained: boolean }>;
}

/**
 * A fetch worker that joins the crawl's worker membership and consumes the partitions the hash
 * ring gives it, following the assignment as workers come and go.
 */
export async function startWorkerService(runtime: Runtime, options: { concurrency: number; memberId?: string; onFatal?: (error: TrawlError) => void }): Promise<WorkerService> {
  const { config } = runtime;
  const worker = createCrawlWorker(runtime, { concurrency: options.concurrency, partitions: [], onFatal: options.onFatal });
  const membership = new WorkerMembership(
    runtime.redis,
    { namespace: config.namespace, partitions: config.partitions, memberId: options.memberId ?? `worker@${hostname()}:${process.pid}:${randomUUID().slice(0, 6)}`, heartbeatTtlMs: config.worker.heartbeatMs },
    runtime.clock,
    runtime.logger.child({ component: 'membership' }),
    (partitions) => worker.consume(partitions),
  );
  await membership.start();
  await worker.ready();
  return {
    worker,
    membership,
    async stop(timeoutMs) {
      await membership.stop();
      return worker.stop(timeoutMs);
    },
  };
}
