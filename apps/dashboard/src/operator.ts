import { type CrawlPolicy, type Discovery, policyFromConfig, type ResolvedPolicy, resolvePolicy } from '@trawl/crawl';
import { Freshness, type FreshnessQuery, OperatorQueries } from '@trawl/db';
import { addSeeds, schedulerStatus } from '@trawl/dispatch';
import { UrlFlag } from '@trawl/frontier';
import { explainDelay } from '@trawl/politeness';
import { discoverQueues, isFetchQueueName, openQueue, type QueueSpec, type SeedsJobData } from '@trawl/queue';
import { decide, parseRobots, type RobotsEntry } from '@trawl/robots';
import { restorePauses, type Runtime } from '@trawl/runtime';
import { politeCapacity, RateWindow } from './capacity.js';

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

export interface RobotsState {
  origin: string | null;
  state: 'rules' | 'allow-all' | 'unavailable' | 'missing' | 'ignored';
  status: number | null;
  fetched_at: string | null;
  expires_at: string | null;
  reason: string | null;
  crawl_delay_ms: number | null;
  rules: { allow: boolean; pattern: string }[];
  disallowed_paths: string[];
}

const iso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined || ms <= 0 ? null : new Date(ms).toISOString());

/** The code of a dead letter's reason: "ERR_HTTP_5XX: HTTP 503 (…)" → "ERR_HTTP_5XX". */
export const reasonCode = (reason: string): string => /^([A-Z][A-Z0-9_]{2,60}):/.exec(reason)?.[1] ?? (reason.slice(0, 60) || 'unknown');

/**
 * What the dashboard reads and does to a running crawl, on one runtime: seeds, a host's status,
 * refreshes, pauses, the crawl's statistics and freshness. HTTP-free; the routes validate and
 * call it.
 */
export class CrawlOperator {
  readonly queries: OperatorQueries;
  readonly freshness: Freshness;
  private readonly discovery: Discovery;
  private readonly rate = new RateWindow(30_000);
  private queues = new Map<string, { spec: QueueSpec; queue: OpenedQueue }>();
  private discoveredAt = 0;
  private readonly snapshotCache: Cached<CrawlSnapshot>;
  /** Aggregates over whole tables: fine every half minute, too costly every poll. */
  private readonly slow: Cached<[Awaited<ReturnType<Runtime['db']['counts']>>, { code: string; pages: number }[], Awaited<ReturnType<Freshness['report']>>['total']]>;

  constructor(
    readonly runtime: Runtime,
    private readonly options: { snapshotTtlMs?: number; slowTtlMs?: number; rediscoverQueuesMs?: number } = {},
  ) {
    this.queries = new OperatorQueries(runtime.db.pool, runtime.config.namespace);
    this.freshness = new Freshness(runtime.db.pool, runtime.config.namespace);
    this.discovery = runtime.discovery();
    this.snapshotCache = new Cached(options.snapshotTtlMs ?? 2000, () => this.computeSnapshot());
    this.slow = new Cached(options.slowTtlMs ?? SLOW_TTL_MS, () =>
      Promise.all([runtime.db.counts(), this.queries.errorCodes(10), this.freshness.report({}).then((r) => r.total)]),
    );
  }

  private get now(): number {
    return this.runtime.clock.now();
  }

  async policy(): Promise<ResolvedPolicy> {
    return (await this.runtime.policy.get()) ?? resolvePolicy(this.basePolicy());
  }

  private basePolicy(): CrawlPolicy {
    return policyFromConfig(this.runtime.config, []);
  }

  /** Seeds through the normal path; throws SeedsRejected (nothing applied) when one URL is malformed. */
  async addSeeds(request: SeedsJobData): Promise<{ enqueued: number; already_seen: number }> {
    const report = await addSeeds({ policyStore: this.runtime.policyStore, discovery: this.discovery, basePolicy: () => this.basePolicy() }, request);
    await this.runtime.counters.flush();
    await this.runtime.policy.refresh();
    return { enqueued: report.enqueued, already_seen: report.already_seen };
  }

  /** Every queue of the namespace, opened once (re-discovered now and then: new queues appear). */
  async allQueues(): Promise<{ spec: QueueSpec; queue: OpenedQueue }[]> {
    const every = this.options.rediscoverQueuesMs ?? 60_000;
    if (this.queues.size === 0 || this.now - this.discoveredAt >= every) {
      this.discoveredAt = this.now;
      const specs = await discoverQueues(this.runtime.redis, this.runtime.config.namespace, this.runtime.config.partitions);
      for (const spec of specs) {
        const id = `${spec.prefix}:${spec.name}`;
        if (!this.queues.has(id)) this.queues.set(id, { spec, queue: openQueue(this.runtime.redis, spec) });
      }
    }
    return [...this.queues.values()];
  }

  /** The robots.txt the crawl holds for a host (its https origin, else http), and what it says. */
  async robotsOf(host: string, policy: ResolvedPolicy): Promise<RobotsState> {
    const none: RobotsState = { origin: null, state: 'missing', status: null, fetched_at: null, expires_at: null, reason: null, crawl_delay_ms: null, rules: [], disallowed_paths: [] };
    if (!policy.policy.robots.obey) return { ...none, state: 'ignored' };
    let found: { origin: string; entry: RobotsEntry } | null = null;
    for (const origin of [`https://${host}`, `http://${host}`]) {
      let entry: RobotsEntry | null = null;
      try {
        entry = await this.runtime.robots.get(origin);
      } catch {
        entry = null; // not a valid origin for this host name
      }
      if (entry && (!found || fetchedAt(entry) > fetchedAt(found.entry))) found = { origin, entry };
    }
    if (!found) return none;
    const { origin, entry } = found;
    const base = { ...none, origin };
    if (entry.kind === 'allow-all') return { ...base, state: 'allow-all', status: entry.status, fetched_at: iso(entry.fetchedAt), expires_at: iso(entry.expiresAt) };
    if (entry.kind === 'unavailable') {
      const verdict = decide(entry, `${origin}/`, this.now, policy.robots);
      return { ...base, state: 'unavailable', expires_at: iso(entry.retryAt), reason: verdict.verdict === 'unavailable' ? verdict.reason : `${entry.reason} (using the last good copy)` };
    }
    const rules = parseRobots(`${origin}/robots.txt`, entry.body, policy.robots.productToken);
    return {
      ...base,
      state: 'rules',
      status: entry.status,
      fetched_at: iso(entry.fetchedAt),
      expires_at: iso(entry.expiresAt),
      crawl_delay_ms: rules.crawlDelayMs === null ? null : Math.min(rules.crawlDelayMs, policy.robots.maxCrawlDelayMs),
      rules: [...rules.rules],
      disallowed_paths: rules.rules.filter((r) => !r.allow).map((r) => r.pattern),
    };
  }

  /** The delay in force for a host and why, from its state in the frontier and its robots.txt. */
  private async delayOf(host: string, policy: ResolvedPolicy, lastFetchMs: number | null) {
    const [state, robots] = await Promise.all([this.runtime.frontier.hostState(host), this.robotsOf(host, policy)]);
    const explained = explainDelay({ crawlDelayMs: robots.crawl_delay_ms, health: { streak: state.streak, backoffMs: state.backoffMs }, lastResponseMs: lastFetchMs }, policy.politeness);
    return { state, robots, explained };
  }

  /** A host's status for operators; null when the crawl has never heard of it. */
  async domainStatus(host: string) {
    const policy = await this.policy();
    const [recent, urls, paused] = await Promise.all([this.queries.recentFetches(host, 1), this.queries.hostUrlStates(host), this.runtime.frontier.isPaused(host)]);
    const last = recent[0] ?? null;
    const { state, robots, explained } = await this.delayOf(host, policy, last?.fetchMs ?? null);
    const known = state.total > 0 || state.due > 0 || Object.values(urls).some((n) => n > 0) || last !== null;
    if (!known) return null;
    const partition = this.runtime.frontier.partitionOf(host);
    return {
      host,
      partition,
      paused,
      crawl_delay_ms: explained.delayMs,
      delay_reason: explained.reason,
      delay_terms: {
        base_ms: explained.terms.baseMs,
        base: explained.terms.base,
        backoff_ms: explained.terms.backoffMs,
        adaptive_ms: explained.terms.adaptiveMs,
        max_delay_ms: explained.terms.maxDelayMs,
      },
      last_fetched_at: iso(last?.fetchedAt),
      last_status: last?.httpStatus ?? null,
      last_error: last?.errorCode ?? null,
      next_available_at: iso(state.due),
      queue_depth: state.queued,
      in_flight: state.fetching,
      leased: state.claim !== null,
      backoff_ms: state.backoffMs,
      backoff_streak: state.streak,
      backoff_until: state.backoffMs > 0 && explained.reason === 'backoff' ? iso(state.due) : null,
      robots,
      dead_letters: urls.failed,
      urls,
    };
  }

  async recentFetches(host: string, limit: number) {
    return (await this.queries.recentFetches(host, limit)).map((f) => ({
      url: f.url,
      url_hash: f.urlHash,
      http_status: f.httpStatus,
      error_code: f.errorCode,
      error_message: f.errorMessage,
      fetched_at: iso(f.fetchedAt) as string,
      fetch_ms: f.fetchMs,
      content_length: f.contentLength,
      next_crawl_at: iso(f.nextCrawlAt),
    }));
  }

  /**
   * An operator's refresh: the URL goes back into the frontier past the seen-set, flagged as a
   * re-crawl, at `priority` (1: the top band), and `urls.state` becomes queued. Null: unknown hash.
   */
  async refresh(hash: Buffer, priority: number): Promise<{ queued: true; estimated_crawl_at: string | null } | null> {
    const known = await this.queries.url(hash);
    if (!known) return null;
    const { frontier } = this.runtime;
    await frontier.push([{ url: known.url, host: known.host, depth: known.depth, hops: 0, flags: UrlFlag.Recrawl, priority }], { maxUrlsPerHost: 0, maxQueryVariants: 0 });
    await this.queries.markRequeued(hash);
    const [state, paused] = await Promise.all([frontier.hostState(known.host), frontier.isPaused(known.host)]);
    // Due when its host is next due; a paused host has no estimate.
    return { queued: true, estimated_crawl_at: paused ? null : iso(Math.max(this.now, state.due)) };
  }

  /** Pauses or resumes hosts ('*': the whole crawl), in PostgreSQL (durable) and then the frontier. */
  async setPaused(hosts: readonly string[], paused: boolean, by: string | null): Promise<void> {
    const { frontier } = this.runtime;
    await this.queries.setPaused(hosts, paused, by);
    const single = hosts.filter((h) => h !== '*');
    if (paused) {
      if (hosts.includes('*')) await frontier.pauseAll();
      if (single.length > 0) await frontier.pauseHosts(single);
    } else {
      if (hosts.includes('*')) await frontier.resumeAll();
      if (single.length > 0) await frontier.resumeHosts(single);
    }
    this.snapshotCache.clear();
  }

  /** The pause as PostgreSQL records it, restored into the frontier (a wiped or rebuilt Redis). */
  restorePauses(): Promise<number> {
    return restorePauses(this.runtime);
  }

  async paused() {
    const [rows, live] = await Promise.all([this.queries.pausedHosts(), this.runtime.frontier.paused()]);
    const recorded = new Map(rows.map((r) => [r.host, r]));
    return {
      all: live.all,
      hosts: live.hosts.map((host) => ({ host, paused_at: iso(recorded.get(host)?.pausedAt) , paused_by: recorded.get(host)?.pausedBy ?? null })),
    };
  }

  async freshnessReport(host: string | null, query: FreshnessQuery) {
    if (host !== null) return { total: await this.freshness.host(host, query), hosts: [] };
    return this.freshness.report(query);
  }

  /** The crawl's statistics, computed at most once per `snapshotTtlMs` whoever asks (pages, API, /metrics). */
  snapshot(): Promise<CrawlSnapshot> {
    return this.snapshotCache.get();
  }

  private async computeSnapshot() {
    const { runtime } = this;
    const { config } = runtime;
    const policy = await this.policy();
    const queues = await this.allQueues();
    const [frontier, counters, [db, errorCodes, freshness], schedulers, oldestQueuedAt, paused, sample] = await Promise.all([
      runtime.frontier.stats(),
      runtime.counters.read(),
      this.slow.get(),
      schedulerStatus(runtime.redis, config.namespace, config.partitions, runtime.clock),
      this.queries.oldestQueuedAt(),
      runtime.frontier.paused(),
      runtime.frontier.sampleHosts(Math.ceil(HOST_SAMPLE / config.partitions)),
    ]);
    const queueCounts = await Promise.all(
      queues.map(async ({ spec, queue }) => {
        const counts = (await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')) as Record<'waiting' | 'active' | 'delayed' | 'failed' | 'completed', number>;
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
    // Sampled hosts: their delay in force (capacity), back-off, and the per-host series.
    const pausedHosts = new Set(paused.hosts);
    const measured = await Promise.all(
      sample.filter((h) => !pausedHosts.has(h)).map(async (host) => {
        const { state, explained } = await this.delayOf(host, policy, null);
        return { host, queued: state.queued, delayMs: explained.delayMs, backingOff: explained.reason === 'backoff' || (explained.reason === 'capped' && state.backoffMs > 0) };
      }),
    );
    const hostsWithWork = paused.all ? 0 : frontier.hostsWaiting + frontier.leased;
    const capacity = politeCapacity(measured, hostsWithWork);
    const at = runtime.clock.now();
    const fetchRate = this.rate.add(at, counters.fetched + counters.robotsFetched);
    const deadLetters = queueCounts.filter((q) => isFetchQueueName(q.name)).reduce((n, q) => n + q.failed, 0);
    const topHosts = [...measured].sort((a, b) => b.queued - a.queued || a.host.localeCompare(b.host)).slice(0, config.metrics.topHosts);
    const { partitions, ...frontierTotals } = frontier;
    return {
      at: new Date(at).toISOString(),
      namespace: config.namespace,
      paused: { all: paused.all, hosts: paused.hosts.length },
      frontier: {
        ...frontierTotals,
        hostsInFlight: frontier.leased,
        hostsBackingOff: capacity.hostsBackingOff,
        oldestQueuedAt: iso(oldestQueuedAt),
        oldestQueuedAgeS: oldestQueuedAt === null ? null : Math.max(0, (at - oldestQueuedAt) / 1000),
        partitions,
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
      db,
      topHosts: topHosts.map((h) => ({ host: h.host, queued: h.queued, delayMs: h.delayMs })),
    };
  }

  async close(): Promise<void> {
    await this.discovery.drain();
    await Promise.all([...this.queues.values()].map(({ queue }) => queue.close().catch(() => undefined)));
  }
}

export type CrawlSnapshot = Awaited<ReturnType<CrawlOperator['computeSnapshot']>>;

function fetchedAt(entry: RobotsEntry): number {
  return entry.kind === 'unavailable' ? entry.since : entry.fetchedAt;
}
