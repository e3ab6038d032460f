import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '@trawl/config';
import type { TrawlError } from '@trawl/core';
import {
  Acks,
  canonicalSitemapUrls,
  CrawlArchive,
  type CrawlWorkerDeps,
  Duplicates,
  ProcessWorker,
  Records,
  ThreadAnalyzer,
  UrlStates,
  Validators,
} from '@trawl/crawl/process';
import { NearDupIndex, Sitemaps } from '@trawl/db';
import { ProcessStream } from '@trawl/frontier';
import type { Runtime } from '@trawl/runtime';
import { WarcWriter } from '@trawl/warc';
import { WorkerStages } from './stages.js';

/*
 * The process stage's half of a worker's object graph. Nothing here loads the fetch stage's
 * modules (the HTTP client, BullMQ, the renderer): a process thread composes its stage from this
 * module alone, on a runtime opened `processStageOnly`.
 */

/** What both stages of a process share; the fetch stage adds its HTTP client, address gate, renderer and block detector. */
export type SharedDeps = Omit<CrawlWorkerDeps, 'fetcher' | 'addresses' | 'render' | 'renderHandOver' | 'blocking'>;

/** Consumer names of process stages in the streams' group: `process@<host>:<pid>:<random>`. */
export const PROCESS_CONSUMER = 'process@';
/** This process, among a crawl's: its host name and process id (a process stage on a thread shares both). */
export const processIdentity = (): string => `${hostname()}:${globalThis.process.pid}`;

/** The sitemaps a robots.txt names; when it names none, /sitemap.xml if the crawl guesses it. */
function recordSitemaps(sitemaps: Sitemaps, config: Readonly<Config>, origin: string, urls: string[]): Promise<void> {
  if (!config.sitemaps.enabled) return Promise.resolve();
  if (urls.length > 0) return sitemaps.add(origin, canonicalSitemapUrls(urls), 'robots');
  return config.sitemaps.guess ? sitemaps.add(origin, [`${origin}/sitemap.xml`], 'guess') : Promise.resolve();
}

/**
 * The batchers, writers and policies a process's stages share. `processing`: this process runs a
 * process stage on its event loop (it gets the analysis thread and, when TRAWL_WARC_WRITE is on,
 * the WARC writer). `bodies`: where the process stage finds bodies a fetch stage of this process
 * just stored.
 */
export function sharedDepsOf(runtime: Runtime, options: { processing: boolean; bodies: SharedDeps['bodies'] }): SharedDeps {
  const { config } = runtime;
  const sitemaps = new Sitemaps(runtime.db.pool, config.namespace);
  const nearDup = new NearDupIndex(runtime.db);
  // One WARC writer per worker process: its files carry the host name and pid, and are finished when the worker stops.
  const archive = config.warc.write && options.processing
    ? new CrawlArchive(new WarcWriter({ dir: config.warc.dir, prefix: config.warc.prefix, maxFileBytes: config.warc.maxFileBytes }), nearDup, runtime.store)
    : undefined;
  return {
    frontier: runtime.frontier,
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
    storeText: config.worker.contentStoreText,
    duplicates: new Duplicates(nearDup, () => runtime.clock.now()),
    analyzer: options.processing ? new ThreadAnalyzer(runtime.logger.child({ component: 'analyzer' }), { nice: config.process.nice }) : undefined,
    archive,
    urlStates: new UrlStates(runtime.db),
    acks: new Acks(runtime.frontier),
    policy: runtime.policy,
    counters: runtime.counters,
    timings: runtime.timings,
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
    bodies: options.bodies,
  };
}

/** The process stage on this event loop: every partition's process stream, in the group all process stages share. */
export function processWorkerOf(runtime: Runtime, deps: SharedDeps, onFatal?: (error: TrawlError) => void): ProcessWorker {
  const { config } = runtime;
  return new ProcessWorker(
    { ...deps, logger: runtime.logger.child({ component: 'process' }), maxDeliveries: config.worker.attempts },
    {
      stream: new ProcessStream(runtime.processRedis(), config.namespace, config.partitions, `${PROCESS_CONSUMER}${processIdentity()}:${randomUUID().slice(0, 6)}`),
      partitions: Array.from({ length: config.partitions }, (_, p) => p),
      concurrency: config.process.concurrency,
      claimIdleMs: config.process.claimMs,
      logger: runtime.logger,
      onFatal,
    },
  );
}

/** A process stage alone (a worker's process thread), on a runtime opened `processStageOnly`. */
export function createProcessStage(runtime: Runtime, options: { bodies: SharedDeps['bodies']; onFatal?: (error: TrawlError) => void }): WorkerStages {
  const deps = sharedDepsOf(runtime, { processing: true, bodies: options.bodies });
  return new WorkerStages(deps, null, processWorkerOf(runtime, deps, options.onFatal), runtime.logger);
}
