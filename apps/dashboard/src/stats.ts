import type { ResolvedPolicy } from '@trawl/model';
import type { Freshness, OperatorQueries } from '@trawl/db';
import { schedulerStatus, workerStatus } from '@trawl/dispatch';
import { isFetchQueueName, type openQueue, type QueueSpec, ReadyJobs, RENDER_QUEUE } from '@trawl/queue';
import type { Runtime } from '@trawl/runtime';
import { politeCapacity, RateWindow } from './capacity.js';
import { type HostInspector, iso } from './hosts.js';

type OpenedQueue = ReturnType<typeof openQueue>;

/** Hosts sampled (over all partitions) for the capacity estimate and the per-host metrics. */
const HOST_SAMPLE = 200;
/** Newest failed jobs read (over all fetch queues) for the top dead-letter reasons. */
const REASON_SAMPLE = 500;
/** Aggregates that scan PostgreSQL tables (counts, error codes, freshness) are refreshed this often. */
const SLOW_TTL_MS = 30_000;

/** A value recomputed at most once per `ttlMs`, however many callers ask at once. */
class Cached<T> {
  private entry: { at: number; value: Promise<T> } | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly compute: () => Promise<T>,
  ) {}

  get(): Promise<T> {
    const now = Date.now();
    if (this.entry && now - this.entry.at < this.ttlMs) return this.entry.value;
    const value = this.compute();
    const entry = { at: now, value };
    this.entry = entry;
    value.catch(() => {
      if (this.entry === entry) this.entry = null;
    });
    return value;
  }

  clear(): void {
    this.entry = null;
  }
}

/** The code of a dead letter's reason: "ERR_HTTP_5XX: HTTP 503 (…)" → "ERR_HTTP_5XX". */
export const reasonCode = (reason: string): string => /^([A-Z][A-Z0-9_]{2,60}):/.exec(reason)?.[1] ?? (reason.slice(0, 60) || 'unknown');

export interface StatsDeps {
  runtime: Runtime;
  queries: OperatorQueries;
  freshness: Freshness;
  hosts: HostInspector;
  policy: () => Promise<ResolvedPolicy>;
  queues: () => Promise<{ spec: QueueSpec; queue: OpenedQueue }[]>;
}

/**
 * The crawl's statistics for the pages, the API and /metrics: computed at most once per
 * `snapshotTtlMs` however many ask, from cheap Redis reads every time and the aggregates that
 * scan PostgreSQL tables every `slowTtlMs`.
 */
export class CrawlStats {
  private readonly rate = new RateWindow(30_000);
  /** The fetch queues' ready lists, counted beside each queue. */
  private readonly readyJobs: ReadyJobs;
  private readonly cache: Cached<CrawlSnapshot>;
  private readonly slow: Cached<[Awaited<ReturnType<Runtime['db']['counts']>>, { code: string; pages: number }[], Awaited<ReturnType<Freshness['report']>>['total']]>;

  constructor(
    private readonly deps: StatsDeps,
    options: { snapshotTtlMs?: number; slowTtlMs?: number } = {},
  ) {
    this.readyJobs = new ReadyJobs(deps.runtime.redis, deps.runtime.config.namespace);
    this.cache = new Cached(options.snapshotTtlMs ?? 2000, () => this.compute());
    this.slow = new Cached(options.slowTtlMs ?? SLOW_TTL_MS, () =>
      Promise.all([deps.runtime.db.counts(), deps.queries.errorCodes(10), deps.freshness.report({}).then((r) => r.total)]),
    );
  }

  snapshot(): Promise<CrawlSnapshot> {
    return this.cache.get();
  }

  /** The next snapshot is computed afresh (after a change an operator made). */
  clear(): void {
    this.cache.clear();
  }

  private async compute() {
    const { runtime } = this.deps;
    const { config } = runtime;
    const policy = await this.deps.policy();
    const queues = await this.deps.queues();
    const [frontier, counters, [db, errorCodes, freshness], schedulers, workerProcesses, oldestQueuedAt, paused, sample, admission] = await Promise.all([
      runtime.frontier.stats(),
      runtime.counters.read(),
      this.slow.get(),
      schedulerStatus(runtime.redis, config.namespace, config.partitions, runtime.clock),
      workerStatus(runtime.redis, config.namespace, runtime.clock),
      this.deps.queries.oldestQueuedAt(),
      runtime.frontier.paused(),
      runtime.frontier.sampleHosts(Math.ceil(HOST_SAMPLE / config.partitions)),
      runtime.admission.check(),
    ]);
    const queueCounts = await Promise.all(
      queues.map(async ({ spec, queue }) => {
        const counts = (await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')) as Record<'waiting' | 'active' | 'delayed' | 'failed' | 'completed', number>;
        // A fetch queue's dispatched jobs wait on its partition's ready list, beside it.
        if (isFetchQueueName(spec.name)) {
          const ready = await this.readyJobs.counts(Number(spec.name.slice('fetch-p'.length)));
          counts.waiting += ready.waiting;
          counts.active += ready.active;
          counts.completed += ready.completed;
        }
        return { name: spec.name, prefix: spec.prefix, ...counts };
      }),
    );
    const reasons = new Map<string, number>();
    let sampledLetters = 0;
    const fetchQueues = queues.filter(({ spec }) => isFetchQueueName(spec.name));
    const perQueue = Math.ceil(REASON_SAMPLE / Math.max(1, fetchQueues.length));
    for (const { queue } of fetchQueues) {
      for (const job of await queue.getFailed(0, perQueue - 1)) {
        sampledLetters += 1;
        const code = reasonCode(job.failedReason ?? '');
        reasons.set(code, (reasons.get(code) ?? 0) + 1);
      }
    }
    const workers = await (queues.find((q) => q.spec.name === 'fetch-p0')?.queue.getWorkersCount() ?? Promise.resolve(0));
    // Pages handed to a render stage, each holding its host until it is rendered.
    const renderCounts = queueCounts.find((q) => q.name === RENDER_QUEUE);
    const renderOldestAt = renderCounts && renderCounts.waiting > 0 ? ((await queues.find((q) => q.spec.name === RENDER_QUEUE)?.queue.getJobs(['wait'], 0, 0, true))?.[0]?.timestamp ?? null) : null;
    // Sampled hosts: their delay in force (capacity), back-off, and the per-host series.
    const pausedHosts = new Set(paused.hosts);
    const measured = await Promise.all(
      sample.filter((h) => !pausedHosts.has(h)).map(async (host) => {
        const { state, explained } = await this.deps.hosts.delayOf(host, policy, null);
        return { host, queued: state.queued, delayMs: explained.delayMs, backingOff: explained.reason === 'backoff' || (explained.reason === 'capped' && state.backoffMs > 0) };
      }),
    );
    const hostsWithWork = paused.all ? 0 : frontier.hostsWaiting + frontier.leased;
    const capacity = politeCapacity(measured, hostsWithWork);
    const at = runtime.clock.now();
    const fetchRate = this.rate.add(at, counters.fetched + counters.robotsFetched);
    const deadLetters = queueCounts.filter((q) => isFetchQueueName(q.name)).reduce((n, q) => n + q.failed, 0);
    const topHosts = [...measured].sort((a, b) => b.queued - a.queued || a.host.localeCompare(b.host)).slice(0, config.metrics.topHosts);
    const { partitions, processOldestAt, ...frontierTotals } = frontier;
    return {
      at: new Date(at).toISOString(),
      namespace: config.namespace,
      paused: { all: paused.all, hosts: paused.hosts.length },
      admission: { state: admission.state, queued: admission.queued, maxQueued: admission.maxQueued, resumeBelow: admission.resumeBelow, since: iso(admission.since) },
      frontier: {
        ...frontierTotals,
        hostsInFlight: frontier.leased,
        hostsBackingOff: capacity.hostsBackingOff,
        oldestQueuedAt: iso(oldestQueuedAt),
        oldestQueuedAgeS: oldestQueuedAt === null ? null : Math.max(0, (at - oldestQueuedAt) / 1000),
        processOldestAgeS: processOldestAt === null ? null : Math.max(0, (at - processOldestAt) / 1000),
        renderBacklog: renderCounts ? renderCounts.waiting + renderCounts.delayed : 0,
        renderOldestAgeS: renderOldestAt === null ? null : Math.max(0, (at - renderOldestAt) / 1000),
        partitions: partitions.map(({ processOldestAt: _oldest, ...p }) => p),
      },
      rate: {
        fetchesPerSecond: fetchRate,
        politeCapacityPerSecond: capacity.pagesPerSecond,
        utilization: fetchRate === null || capacity.pagesPerSecond === 0 ? null : fetchRate / capacity.pagesPerSecond,
        hostsSampled: capacity.sampled,
        hostsWithWork: capacity.hostsWithWork,
      },
      queues: queueCounts,
      counters,
      outcomes: {
        byClass: { '2xx': counters.status2xx, '3xx': counters.status3xx, '4xx': counters.status4xx, '5xx': counters.status5xx, error: counters.fetchErrors },
        errorCodes,
      },
      deadLetters: { count: deadLetters, sampled: sampledLetters, topReasons: [...reasons].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count).slice(0, 10) },
      recrawl: { deadlineMissRate: freshness.deadlineMissRate, recrawls: freshness.recrawls, late: freshness.late, overdue: freshness.overdue, pages: freshness.pages },
      schedulers,
      workers,
      workerProcesses,
      db,
      topHosts: topHosts.map((h) => ({ host: h.host, queued: h.queued, delayMs: h.delayMs })),
    };
  }
}

export type CrawlSnapshot = Awaited<ReturnType<CrawlStats['compute']>>;
