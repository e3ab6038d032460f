import { type CrawlPolicy, type Discovery, policyFromConfig, type RenderOverride, RenderOverrides, type ResolvedPolicy, resolvePolicy } from '@trawl/model';
import { Freshness, type FreshnessQuery, OperatorQueries } from '@trawl/db';
import { addSeeds } from '@trawl/dispatch';
import { type AdmissionStatus, UrlFlag } from '@trawl/frontier';
import { discoverQueues, openQueue, type QueueSpec, type SeedsJobData } from '@trawl/queue';
import { restorePauses, restoreRenderOverrides, setRenderOverride, type Runtime } from '@trawl/runtime';
import { HostInspector, iso } from './hosts.js';
import { CrawlStats, type CrawlSnapshot } from './stats.js';

type OpenedQueue = ReturnType<typeof openQueue>;

/**
 * What the dashboard reads and does to a running crawl, on one runtime: seeds, a host's status,
 * refreshes, pauses, the crawl's statistics and freshness. HTTP-free; the routes validate and
 * call it.
 */
export class CrawlOperator {
  readonly queries: OperatorQueries;
  readonly freshness: Freshness;
  readonly hosts: HostInspector;
  readonly stats: CrawlStats;
  private readonly discovery: Discovery;
  private readonly renderOverrides: RenderOverrides;
  private queues = new Map<string, { spec: QueueSpec; queue: OpenedQueue }>();
  private discoveredAt = 0;

  constructor(
    readonly runtime: Runtime,
    private readonly options: { snapshotTtlMs?: number; slowTtlMs?: number; rediscoverQueuesMs?: number } = {},
  ) {
    this.queries = new OperatorQueries(runtime.db.pool, runtime.config.namespace);
    this.freshness = new Freshness(runtime.db.pool, runtime.config.namespace);
    this.discovery = runtime.discovery();
    const policy = () => this.policy();
    this.hosts = new HostInspector(runtime, this.queries, policy);
    this.renderOverrides = new RenderOverrides(runtime.redis, runtime.config.namespace, () => runtime.clock.now(), 0);
    this.stats = new CrawlStats({ runtime, queries: this.queries, freshness: this.freshness, hosts: this.hosts, policy, queues: () => this.allQueues() }, options);
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

  /** Whether seeds may enter the frontier now (seed admission, shared with the schedulers). */
  admission(): Promise<AdmissionStatus> {
    return this.runtime.admission.check();
  }

  /** Every queue of the namespace, opened once (re-discovered now and then: new queues appear). */
  async allQueues(): Promise<{ spec: QueueSpec; queue: OpenedQueue }[]> {
    const every = this.options.rediscoverQueuesMs ?? 60_000;
    if (this.queues.size === 0 || this.now - this.discoveredAt >= every) {
      this.discoveredAt = this.now;
      const specs = await discoverQueues(this.runtime.redis, this.runtime.config.namespace, this.runtime.config.partitions);
      for (const spec of specs) {
        const id = `${spec.prefix}:${spec.name}`;
        if (!this.queues.has(id)) this.queues.set(id, { spec, queue: openQueue(this.runtime.queueRedis, spec) });
      }
    }
    return [...this.queues.values()];
  }

  /** A host's status for operators; null when the crawl has never heard of it. */
  async domainStatus(host: string) {
    const [status, renderOverride] = await Promise.all([this.hosts.domainStatus(host), this.renderOverrides.of(host)]);
    return status === null ? null : { ...status, render_override: renderOverride };
  }

  /**
   * Sets a host's rendering override (null: TRAWL_RENDER decides), for every worker of the crawl:
   * in PostgreSQL (durable) and then Redis (what the workers read).
   */
  setRenderOverride(host: string, mode: RenderOverride | null, by: string | null): Promise<void> {
    return setRenderOverride(this.runtime, host, mode, by);
  }

  recentFetches(host: string, limit: number) {
    return this.hosts.recentFetches(host, limit);
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
    this.stats.clear();
  }

  /** The pause as PostgreSQL records it, restored into the frontier (a wiped or rebuilt Redis). */
  restorePauses(): Promise<number> {
    return restorePauses(this.runtime);
  }

  /** The rendering overrides as PostgreSQL records them, restored into Redis. */
  restoreRenderOverrides(): Promise<number> {
    return restoreRenderOverrides(this.runtime);
  }

  async paused() {
    const [rows, live] = await Promise.all([this.queries.pausedHosts(), this.runtime.frontier.paused()]);
    const recorded = new Map(rows.map((r) => [r.host, r]));
    return {
      all: live.all,
      hosts: live.hosts.map((host) => ({
        host,
        paused_at: iso(recorded.get(host)?.pausedAt),
        paused_by: recorded.get(host)?.pausedBy ?? null,
        reason: recorded.get(host)?.reason ?? null,
      })),
    };
  }

  async freshnessReport(host: string | null, query: FreshnessQuery) {
    if (host !== null) return { total: await this.freshness.host(host, query), hosts: [] };
    return this.freshness.report(query);
  }

  /** The crawl's statistics (see `CrawlStats`). */
  snapshot(): Promise<CrawlSnapshot> {
    return this.stats.snapshot();
  }

  async close(): Promise<void> {
    await this.discovery.drain();
    await Promise.all([...this.queues.values()].map(({ queue }) => queue.close().catch(() => undefined)));
  }
}

export type { CrawlSnapshot } from './stats.js';
