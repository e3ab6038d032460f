import type { ResolvedPolicy } from '@trawl/model';
import type { OperatorQueries } from '@trawl/db';
import { explainDelay } from '@trawl/politeness';
import { decide, parseRobots, type RobotsEntry, type UsagePreference } from '@trawl/robots';
import type { Runtime } from '@trawl/runtime';

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
  usage: UsagePreference[];
}

export const iso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined || ms <= 0 ? null : new Date(ms).toISOString());

/**
 * One host as operators see it: its robots.txt as the crawl holds it, the delay in force and
 * why (computed with the politeness model from the host's state in the frontier), its queue,
 * its recent fetches.
 */
export class HostInspector {
  constructor(
    private readonly runtime: Runtime,
    private readonly queries: OperatorQueries,
    private readonly policy: () => Promise<ResolvedPolicy>,
  ) {}

  private get now(): number {
    return this.runtime.clock.now();
  }

  /** The robots.txt the crawl holds for a host (its https origin, else http), and what it says. */
  async robotsOf(host: string, policy: ResolvedPolicy, tierLevel = 0): Promise<RobotsState> {
    const none: RobotsState = { origin: null, state: 'missing', status: null, fetched_at: null, expires_at: null, reason: null, crawl_delay_ms: null, rules: [], disallowed_paths: [], usage: [] };
    if (!policy.policy.robots.obey) return { ...none, state: 'ignored' };
    let found: { origin: string; entry: RobotsEntry } | null = null;
    for (const origin of [`https://${host}`, `http://${host}`]) {
      let entry: RobotsEntry | null = null;
      try {
        entry = await this.runtime.robots.get(origin, tierLevel);
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
      usage: [...rules.usage],
    };
  }

  /** The delay in force for a host and why, from its state in the frontier and its robots.txt. */
  async delayOf(host: string, policy: ResolvedPolicy, lastFetchMs: number | null) {
    const state = await this.runtime.frontier.hostState(host);
    // A host moved up a proxy tier goes by the robots.txt read through that tier.
    const robots = await this.robotsOf(host, policy, state.level);
    const explained = explainDelay({ crawlDelayMs: robots.crawl_delay_ms, health: { streak: state.streak, backoffMs: state.backoffMs }, lastResponseMs: lastFetchMs }, policy.politeness);
    return { state, robots, explained };
  }

  /** The proxy tier a host moved `level` tiers up goes through (null: no proxies). */
  private proxyTierOf(host: string, level: number): string | null {
    if (this.runtime.config.fetch.proxyUrls.length === 0) return null;
    return this.runtime.fetcher.tierOf(host, level).tier;
  }

  /** A host's status for operators; null when the crawl has never heard of it. */
  async domainStatus(host: string) {
    const policy = await this.policy();
    const [recent, urls, paused, [rank]] = await Promise.all([
      this.queries.recentFetches(host, 1),
      this.queries.hostUrlStates(host),
      this.runtime.frontier.isPaused(host),
      this.runtime.frontier.hostScores([host]),
    ]);
    const last = recent[0] ?? null;
    const { state, robots, explained } = await this.delayOf(host, policy, last?.fetchMs ?? null);
    const known = state.total > 0 || state.due > 0 || Object.values(urls).some((n) => n > 0) || last !== null;
    if (!known) return null;
    const partition = this.runtime.frontier.partitionOf(host);
    return {
      host,
      worker_id: partition,
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
      // Never null: a host that may be fetched now is available as of now.
      next_available_at: iso(Math.max(state.due, this.now)),
      queue_depth: state.queued,
      in_flight: state.fetching,
      leased: state.claim !== null,
      backoff_ms: state.backoffMs,
      backoff_streak: state.streak,
      backoff_until: state.backoffMs > 0 && explained.reason === 'backoff' ? iso(state.due) : null,
      proxy_tier: this.proxyTierOf(host, state.level),
      tier_level: state.level,
      refusals: state.blocks,
      blocked_reason: state.blocked,
      rank: { score: rank?.score ?? 0, linking_hosts: rank?.inLinkHosts ?? 0, seed_priority: rank?.seedPriority ?? 0 },
      robots,
      robots_disallowed_paths: robots.disallowed_paths,
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
      rendered: f.rendered,
      render_reason: f.renderReason,
    }));
  }
}

function fetchedAt(entry: RobotsEntry): number {
  return entry.kind === 'unavailable' ? entry.since : entry.fetchedAt;
}
