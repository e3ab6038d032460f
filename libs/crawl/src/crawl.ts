import { sleep } from '@trawl/core';
import { deleteByPrefix } from '@trawl/redis';
import type { CounterValues } from './counters.js';
import { Dispatcher } from './dispatcher.js';
import { type Candidate, seedCandidate } from './discovery.js';
import { type CrawlPolicy, policyFromConfig, resolvePolicy, withSeeds } from './policy.js';
import type { Runtime } from './runtime.js';
import { createDiscovery, CrawlWorker } from './worker.js';

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
  counters: CounterValues;
}

export interface RunCrawlOptions {
  seeds: readonly string[];
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

/** Removes everything a namespace holds: its Redis keys and its PostgreSQL schema. */
export async function wipeNamespace(runtime: Runtime): Promise<void> {
  await deleteByPrefix(runtime.redis, `${runtime.config.namespace}:`);
  await runtime.db.dropSchema();
  await runtime.db.migrate();
}

/**
 * Queues seeds (widening the published policy's scope to them) and reports what happened to
 * each. Seeds already discovered by this namespace are not queued again.
 */
export async function addSeeds(runtime: Runtime, seeds: readonly string[], base?: CrawlPolicy): Promise<CrawlSummary['seeds'] & { policy: CrawlPolicy }> {
  const existing = await runtime.policyStore.load();
  const invalid: string[] = [];
  const valid: string[] = [];
  let policy = base ?? existing ?? policyFromConfig(runtime.config, []);
  const resolvedForNormalizing = resolvePolicy(policy);
  const candidates: Candidate[] = [];
  for (const raw of seeds) {
    const candidate = seedCandidate(raw, resolvedForNormalizing);
    if ('error' in candidate) invalid.push(`${raw} (${candidate.error})`);
    else {
      candidates.push(candidate);
      valid.push(candidate.url);
    }
  }
  policy = withSeeds(policy, valid);
  policy = await runtime.policyStore.publish(policy);
  const discovery = createDiscovery(runtime);
  const result = await discovery.add(candidates);
  await runtime.counters.flush();
  return { given: seeds.length, queued: result.queued, known: result.known, invalid, policy };
}

/**
 * The all-in-one crawl: publishes the policy, queues the seeds, runs the dispatcher (and a
 * worker) in this process, reports progress, and returns when the frontier and all in-flight
 * work are empty — or max-pages is reached, or the signal aborts.
 */
export async function runCrawl(runtime: Runtime, options: RunCrawlOptions): Promise<CrawlSummary> {
  const { config, frontier, clock } = runtime;
  const logger = runtime.logger.child({ component: 'crawl' });
  if (options.fresh) await wipeNamespace(runtime);

  const startCounters = await runtime.counters.read();
  const startStats = await frontier.stats();
  const fresh = policyFromConfig(runtime.config, []);
  const existing = await runtime.policyStore.load();
  // Settings of this run (limits, delay, normalization) apply; earlier seeds stay in scope.
  const base: CrawlPolicy = {
    ...fresh,
    pagesBaseline: startStats.done,
    scope: existing && existing.scope.mode === fresh.scope.mode ? existing.scope : fresh.scope,
  };
  const seeds = await addSeeds(runtime, options.seeds, base);
  logger.info({ seeds: seeds.given, queued: seeds.queued, known: seeds.known, invalid: seeds.invalid.length }, 'seeds added');

  const dispatcher = new Dispatcher(
    {
      frontier,
      queues: runtime.queues,
      discovery: createDiscovery(runtime),
      policy: runtime.policy,
      clock,
      logger: runtime.logger.child({ component: 'dispatcher' }),
    },
    { window: config.dispatch.window, pollMs: 25, leadMs: config.dispatch.leadMs, repairEveryMs: 30_000, repairOlderThanMs: 2 * config.worker.leaseMs },
  );
  const worker = options.runWorker === false ? null : new CrawlWorker(runtime, { concurrency: options.concurrency });
  // Consumers first, so the first dispatched jobs do not wait for connections to open.
  worker?.start();
  await worker?.ready();
  const started = clock.now();
  dispatcher.start();

  const everyMs = options.progressEveryMs ?? 1000;
  const window: { at: number; fetched: number }[] = [];
  let finished: CrawlSummary['finished'] = 'interrupted';
  let lastProgress = 0;
  const maxPages = seeds.policy.maxPages;

  let finishedAt = 0;
  while (!options.signal?.aborted) {
    await sleep(Math.min(100, everyMs), options.signal);
    if (options.signal?.aborted) break;
    const stats = await frontier.stats();
    const doneThisRun = stats.done - startStats.done;
    if (stats.queued === 0 && stats.leased === 0) {
      // A crash may have left URLs inserted but never queued; queue them before calling it done.
      const repaired = await createDiscovery(runtime).repair(0);
      if (repaired === 0) {
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
        queued: stats.queued,
        inFlight: stats.leased,
        hostsWaiting: stats.hostsWaiting,
        hostsReady: stats.hostsReady,
        errors: counters.fetchErrors - startCounters.fetchErrors + (counters.dead - startCounters.dead),
        retries: counters.retries - startCounters.retries,
      });
    }
  }

  await dispatcher.stop();
  if (worker) await worker.stop(config.worker.drainTimeoutMs);
  await runtime.counters.flush();
  // The crawl's own time: from the first dispatch to the moment nothing was left (an interrupted
  // crawl: to the end of its drain).
  const durationMs = (finishedAt || clock.now()) - started;
  const end = await runtime.counters.read();
  const delta = Object.fromEntries(Object.entries(end).map(([k, v]) => [k, v - startCounters[k as keyof CounterValues]])) as CounterValues;
  const stats = await frontier.stats();
  const done = stats.done - startStats.done;
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
    left: { queued: stats.queued, inFlight: stats.leased },
    counters: delta,
  };
}
