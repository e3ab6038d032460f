import { ErrorCode, sleep } from '@trawl/core';
import type { Logger } from '@trawl/telemetry';
import { type CounterValues, policyFromConfig, withSettings } from '@trawl/model';
import { addSeeds, rebuildKey } from '@trawl/dispatch';
import type { Runtime } from '@trawl/runtime';
import { startSchedulerService } from '@trawl/scheduler';
import { startWorkerService } from '@trawl/worker';
import type { SeedLine } from './args.js';

export interface Progress {
  elapsedMs: number;
  /** URLs finished (fetched and recorded, or given up) in this run, by every process. */
  fetched: number;
  /** Fetch rate over the last few seconds. */
  pagesPerSec: number;
  queued: number;
  inFlight: number;
  hostsWaiting: number;
  hostsReady: number;
  errors: number;
  retries: number;
}

export interface CrawlSummary {
  namespace: string;
  seeds: { given: number; queued: number; known: number; invalid: string[] };
  finished: 'complete' | 'max-pages' | 'interrupted';
  durationMs: number;
  /** URLs finished in this run by every process (exact: counted by the frontier's acks). */
  fetched: number;
  pagesPerSec: number;
  bytes: number;
  /** From the processes' counters, which other processes flush every half second: may lag slightly. */
  statuses: { '2xx': number; '3xx': number; '4xx': number; '5xx': number };
  fetchErrors: number;
  retries: number;
  deadLettered: number;
  urlsDiscovered: number;
  bloomFalsePositives: number;
  left: { queued: number; inFlight: number };
  /** Hosts paused as blocked (refusing the crawler with no proxy tier left), with why and the URLs they still hold. */
  blockedHosts: Array<{ host: string; reason: string; queued: number }>;
  /** How late this process's fetches started after their hosts' due times (seconds), or null when it fetched none. */
  fetchLateness: { count: number; p50S: number; p90S: number; p99S: number } | null;
  counters: CounterValues;
}

export interface RunCrawlOptions {
  /** Seed URLs, each of priority 1 unless given its own. */
  seeds: readonly (string | SeedLine)[];
  /** Wipe the namespace first (Redis keys and the PostgreSQL schema). */
  fresh?: boolean;
  /** Fetch jobs run at once in this process. */
  concurrency: number;
  progressEveryMs?: number;
  onProgress?: (progress: Progress) => void;
  /** Abort to stop early (SIGINT/SIGTERM): in-flight work drains, the rest stays queued. */
  signal?: AbortSignal;
  /** Also run the fetch worker in this process (default true). */
  runWorker?: boolean;
}

/**
 * The all-in-one crawl: publishes the policy, queues the seeds, runs the dispatcher (and a
 * worker) in this process, reports progress, and returns when the frontier and all in-flight
 * work are empty — or max-pages is reached, or the signal aborts.
 */
export async function runCrawl(runtime: Runtime, options: RunCrawlOptions): Promise<CrawlSummary> {
  const { config, frontier, clock } = runtime;
  const logger = runtime.logger.child({ component: 'crawl' });
  if (options.fresh) await runtime.wipe();
  // Redis lost this crawl (PostgreSQL still has it): queue nothing until it has been rebuilt.
  await waitUntilIntact(runtime, options.signal, logger);

  const startCounters = await runtime.counters.read();
  const startStats = await frontier.stats();
  // Settings of this run (limits, delay, normalization) apply, max-pages counts from here, and
  // earlier seeds stay in scope.
  const fresh = policyFromConfig(config, []);
  await runtime.policyStore.update((stored) => withSettings(stored, fresh, startStats.done));
  const seedDiscovery = runtime.discovery();
  // One request per priority the seeds were given, in the order each first appears.
  const byPriority = new Map<number | undefined, string[]>();
  for (const seed of options.seeds) {
    const { url, priority } = typeof seed === 'string' ? { url: seed, priority: undefined } : seed;
    byPriority.set(priority, [...(byPriority.get(priority) ?? []), url]);
  }
  const seeds = { given: 0, queued: 0, known: 0, invalid: [] as string[], policy: fresh };
  for (const [priority, urls] of byPriority) {
    const added = await addSeeds({ policyStore: runtime.policyStore, discovery: seedDiscovery, basePolicy: () => fresh }, { urls, ...(priority === undefined ? {} : { priority }) }, { partial: true });
    seeds.given += added.given;
    seeds.queued += added.enqueued;
    seeds.known += added.already_seen;
    seeds.invalid.push(...added.invalid);
    seeds.policy = added.policy;
  }
  await runtime.counters.flush();
  logger.info({ seeds: seeds.given, queued: seeds.queued, known: seeds.known, invalid: seeds.invalid.length }, 'seeds added');

  // A fatal fault (disk full, …) stops the crawl cleanly; run it again after the fix to resume.
  const stop = new AbortController();
  options.signal?.addEventListener('abort', () => stop.abort(), { once: true });
  if (options.runWorker !== false) await runtime.store.check();
  // Consumers first, so the first dispatched jobs do not wait for connections to open.
  const workerService = options.runWorker === false ? null : await startWorkerService(runtime, { concurrency: options.concurrency, onFatal: () => stop.abort() });
  const worker = workerService?.worker ?? null;
  const started = clock.now();
  const service = await startSchedulerService(runtime, { pagesBaseline: startStats.done });
  const repair = runtime.discovery();
  const spillsLeftOver = leftOverSpills(runtime, logger);

  const everyMs = options.progressEveryMs ?? 1000;
  const window: { at: number; fetched: number }[] = [];
  let finished: CrawlSummary['finished'] = 'interrupted';
  let lastProgress = 0;
  const maxPages = seeds.policy.maxPages;

  let finishedAt = 0;
  // URLs done count from the frontier's acks; a rebuilt frontier counts from zero again.
  let doneBase = startStats.done;
  let doneBeforeWipe: number | null = null;
  // Once nothing is queued, the crawl ends with the jobs in flight: look more often, so the
  // crawl is over when its last page is recorded, not up to a tenth of a second later.
  let tail = false;
  let blockedCheckedAt = 0;
  while (!stop.signal.aborted) {
    await sleep(Math.min(tail ? 20 : 100, everyMs), stop.signal);
    if (stop.signal.aborted) break;
    // The check and the frontier's figures in one round trip (ioredis pipelines them).
    const [intact, stats] = await Promise.all([runtime.intact(), frontier.stats()]);
    if (!intact.ok) {
      // An empty frontier now means lost, not finished: wait for the rebuild (the scheduler
      // service has stopped dispatching and logged what to run).
      if (doneBeforeWipe === null) {
        doneBeforeWipe = Math.max(0, stats.done - doneBase);
        logger.error({ code: ErrorCode.NamespaceWiped }, intact.message);
      }
      continue;
    }
    if (doneBeforeWipe !== null) {
      doneBase = stats.done - doneBeforeWipe;
      doneBeforeWipe = null;
    }
    const doneThisRun = stats.done - doneBase;
    // Queued URLs are in Redis or, past TRAWL_FRONTIER_REDIS_MAX_URLS, spilled to PostgreSQL.
    const queued = stats.queued + stats.spilled;
    tail = queued === 0;
    if (stats.leased === 0 && (queued === 0 || (stats.queued === 0 && (await spillsLeftOver(stats.spilled))))) {
      // Empty because Redis was lost just now? Then nothing is done, and nothing may be pushed.
      if (!(await runtime.intact()).ok) continue;
      // Or because a rebuild has handed the crawl back and is still restoring URLs.
      if ((await runtime.redis.exists(rebuildKey(config.namespace))) === 1) continue;
      // A crash may have left URLs inserted but never queued; queue them before calling it done.
      const repaired = await repair.repair(0);
      // The figures above are read a partition at a time: a claim, or a page's links pushed to
      // another partition just before its lease was acknowledged, may have fallen between two
      // reads. Read again: nothing leased, nothing queued or spilled since, and no lease
      // acknowledged since (any ack counts in `done`), is finished.
      if (repaired === 0 && (await stillEmpty(frontier, stats))) {
        finished = 'complete';
        finishedAt = clock.now();
        break;
      }
    }
    // Nothing in flight and what is queued belongs only to hosts paused as blocked: nothing more
    // can be fetched without an operator, so a one-off crawl is over (the summary names them).
    if (stats.queued > 0 && stats.leased === 0 && clock.now() - blockedCheckedAt >= 1000) {
      blockedCheckedAt = clock.now();
      const blocked = await frontier.blockedHosts();
      if (blocked.length > 0 && blocked.reduce((sum, host) => sum + host.queued, 0) >= stats.queued) {
        finished = 'complete';
        finishedAt = clock.now();
        break;
      }
    }
    if (maxPages !== null && doneThisRun >= maxPages && stats.leased === 0) {
      finished = 'max-pages';
      finishedAt = clock.now();
      break;
    }
    const now = clock.now();
    if (options.onProgress && now - lastProgress >= everyMs) {
      lastProgress = now;
      const counters = await runtime.counters.read();
      const fetched = doneThisRun;
      window.push({ at: now, fetched });
      while (window.length > 1 && now - (window[0] as { at: number }).at > 5000) window.shift();
      const first = window[0] as { at: number; fetched: number };
      const rate = now > first.at ? ((fetched - first.fetched) * 1000) / (now - first.at) : 0;
      options.onProgress({
        elapsedMs: now - started,
        fetched,
        pagesPerSec: rate,
        queued,
        inFlight: stats.leased,
        hostsWaiting: stats.hostsWaiting,
        hostsReady: stats.hostsReady,
        errors: counters.fetchErrors - startCounters.fetchErrors + (counters.dead - startCounters.dead),
        retries: counters.retries - startCounters.retries,
      });
    }
  }

  await service.stop();
  if (workerService) await workerService.stop(config.worker.drainTimeoutMs);
  await Promise.allSettled([seedDiscovery.drain(), repair.drain()]);
  if (worker?.fatal) throw worker.fatal;
  await runtime.counters.flush();
  // The crawl's own time: from the first dispatch to the moment nothing was left (an interrupted
  // crawl: to the end of its drain).
  const durationMs = (finishedAt || clock.now()) - started;
  const end = await runtime.counters.read();
  const delta = Object.fromEntries(Object.entries(end).map(([k, v]) => [k, v - startCounters[k as keyof CounterValues]])) as CounterValues;
  const stats = await frontier.stats();
  const done = stats.done - doneBase;
  return {
    namespace: config.namespace,
    seeds: { given: seeds.given, queued: seeds.queued, known: seeds.known, invalid: seeds.invalid },
    finished,
    durationMs,
    fetched: done,
    pagesPerSec: durationMs > 0 ? (done * 1000) / durationMs : 0,
    bytes: delta.bytes,
    statuses: { '2xx': delta.status2xx, '3xx': delta.status3xx, '4xx': delta.status4xx, '5xx': delta.status5xx },
    fetchErrors: delta.fetchErrors,
    retries: delta.retries,
    deadLettered: delta.dead,
    urlsDiscovered: delta.urlsNew,
    bloomFalsePositives: delta.bloomFalsePositives,
    left: { queued: stats.queued + stats.spilled, inFlight: stats.leased },
    blockedHosts: await frontier.blockedHosts(),
    fetchLateness: latenessOf(runtime),
    counters: delta,
  };
}

/** Whether the frontier, read once more, still has nothing leased and has not moved: as many URLs queued and spilled, and as many leases acknowledged (`done`), as `before`. */
async function stillEmpty(frontier: Runtime['frontier'], before: { queued: number; spilled: number; done: number }): Promise<boolean> {
  const again = await frontier.stats();
  return again.leased === 0 && again.queued === before.queued && again.spilled === before.spilled && again.done === before.done;
}

/**
 * With nothing queued in Redis and nothing leased, whether the spilled URLs the frontier counts
 * are a leftover: PostgreSQL, which keeps every spilled URL, has none waiting. It is the
 * authority then, since a page's links (and their spilled rows) are written before its lease is
 * acknowledged. A count can outlive its rows when a rebuild of a wiped Redis counts a URL that a
 * push spilled during it, or when a process dies between a push and its row; the refill forgives
 * such a count only after a long grace, which would hold the crawl's end that long.
 */
function leftOverSpills(runtime: Runtime, logger: Logger): (counted: number) => Promise<boolean> {
  let told = false;
  return async (counted) => {
    if (await runtime.db.hasSpilledUrls()) return false;
    if (!told) {
      told = true;
      logger.warn({ counted }, 'the frontier counts spilled URLs that PostgreSQL does not hold (a leftover of a wipe or a crash): the crawl ends without waiting for them');
    }
    return true;
  };
}

function latenessOf(runtime: Runtime): CrawlSummary['fetchLateness'] {
  const q = runtime.timings.quantiles('fetchLateness', [0.5, 0.9, 0.99]);
  if (!q) return null;
  const [p50S, p90S, p99S] = q.values as [number, number, number];
  return { count: q.count, p50S, p90S, p99S };
}

/**
 * Waits while Redis has lost the crawl's data (`Runtime.intact`), saying once what to run; returns
 * at once when it is there, or when `signal` aborts.
 */
async function waitUntilIntact(runtime: Runtime, signal: AbortSignal | undefined, logger: Logger): Promise<void> {
  let told = false;
  for (;;) {
    const intact = await runtime.intact();
    if (intact.ok || signal?.aborted) return;
    if (!told) logger.error({ code: ErrorCode.NamespaceWiped }, intact.message);
    told = true;
    await sleep(1000, signal);
  }
}
