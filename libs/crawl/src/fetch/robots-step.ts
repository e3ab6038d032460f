import { ErrorCode } from '@trawl/core';
import { type BlockOptions, type BlockSignal, blockSignalOfResponse } from '@trawl/politeness';
import type { Fetcher } from '@trawl/fetch';
import type { Counters, ResolvedPolicy } from '@trawl/model';
import {
  decide,
  entryFromFetch,
  needsFetch,
  originOf,
  parseRobots,
  type RobotsCache,
  type RobotsDecision,
  type RobotsEntry,
  type RobotsRefusal,
  refusalOf,
  robotsUrlFor,
} from '@trawl/robots';
import type { Logger } from '@trawl/telemetry';
import type { PipelineDeps } from '../deps.js';

export type RobotsStep =
  /** robots.txt says yes (or is not obeyed): fetch the page, honouring the Crawl-delay. */
  | { kind: 'allow'; crawlDelayMs: number | null }
  /** robots.txt was fetched just now, under the host's token: that was this turn's request. */
  | {
      kind: 'fetched';
      entry: RobotsEntry;
      crawlDelayMs: number | null;
      responseMs: number;
      /** robots.txt could not be fetched (5xx, 429, timeout, connection): until retryAt the host is off limits. */
      failed: boolean;
      /** The fetch was refused by the SSRF guard (nothing was sent). */
      ssrfBlocked: boolean;
      /** Every proxy of the host's tier was out (nothing was sent): try again at retryAt. */
      proxyUnavailable: boolean;
      retryAt: number;
      reason: string;
      /** The answer looked like the host refusing the crawler (a 403, a challenge page), or null. */
      refusal: BlockSignal | null;
    }
  /**
   * The URL is disallowed, or its host's Crawl-delay is over the cap with
   * TRAWL_CRAWL_DELAY_OVER_CAP=skip: record it, never fetch it, never retry it.
   */
  | { kind: 'refused'; refusal: RobotsRefusal }
  /** robots.txt could not be fetched: the host counts as fully disallowed until retryAt. */
  | { kind: 'unavailable'; retryAt: number; reason: string };

function fromDecision(decision: RobotsDecision): RobotsStep {
  if (decision.verdict === 'allow') return { kind: 'allow', crawlDelayMs: decision.crawlDelayMs };
  if (decision.verdict === 'unavailable') return { kind: 'unavailable', retryAt: decision.retryAt, reason: decision.reason };
  return { kind: 'refused', refusal: refusalOf(decision) as RobotsRefusal };
}

export interface RobotsDeps {
  fetcher: Pick<Fetcher, 'fetchRobots'>;
  cache: Pick<RobotsCache, 'get' | 'set'>;
  counters: Pick<Counters, 'add'>;
  now: () => number;
  /** Told when a 5xx robots.txt is read as permission (TRAWL_ROBOTS_SERVER_ERROR=allow), for the audit trail. */
  logger?: Pick<Logger, 'warn'>;
  /** Keeps the sitemaps a fetched robots.txt announces (for the freshness work). */
  recordSitemaps?: (origin: string, urls: string[]) => Promise<void>;
  /** Markers of challenge pages (absent: refusals are not looked for). */
  block?: Pick<BlockOptions, 'bodyMarkers' | 'urlMarkers'>;
}

export function robotsDepsOf(deps: Pick<PipelineDeps, 'fetcher' | 'robots' | 'counters' | 'clock' | 'logger' | 'recordSitemaps' | 'blocking'>): RobotsDeps {
  return {
    fetcher: deps.fetcher,
    cache: deps.robots,
    counters: deps.counters,
    now: () => deps.clock.now(),
    logger: deps.logger,
    recordSitemaps: deps.recordSitemaps,
    block: deps.blocking?.options,
  };
}

/**
 * The robots.txt check, run while the job holds the host's token (so fetching robots.txt is
 * itself a polite request). RFC 9309: a fresh copy decides; a missing or stale one is fetched
 * first, and the page waits for the host's next turn. `tierLevel`: the proxy tiers a blocked host
 * was moved up; robots.txt is read (and cached) through the tier its pages go through.
 */
export async function robotsStep(
  deps: RobotsDeps,
  policy: ResolvedPolicy,
  url: string,
  hopDelayMs: number,
  signal?: AbortSignal,
  tierLevel = 0,
): Promise<RobotsStep> {
  if (!policy.policy.robots.obey) return { kind: 'allow', crawlDelayMs: null };
  const origin = originOf(url);
  const cached = await deps.cache.get(origin, tierLevel);
  if (!needsFetch(cached, deps.now())) {
    return fromDecision(decide(cached as RobotsEntry, url, deps.now(), policy.robots));
  }
  const started = deps.now();
  const result = await deps.fetcher.fetchRobots(robotsUrlFor(url), { signal, hopDelayMs, ...(tierLevel > 0 ? { tierLevel } : {}) });
  const responseMs = deps.now() - started;
  deps.counters.add('robotsFetched');
  const entry = entryFromFetch(
    result.kind === 'response'
      ? { kind: 'response', status: result.status, body: result.body, finalUrl: result.finalUrl }
      : { kind: 'error', code: result.code, message: result.message },
    cached,
    deps.now(),
    policy.robots,
  );
  // Refused before any byte went out (the SSRF guard, every proxy of the tier out): nothing is
  // known about the host's robots.txt, so nothing is cached for it.
  const ssrfBlocked = result.kind === 'error' && result.code === ErrorCode.SsrfBlocked;
  const proxyUnavailable = result.kind === 'error' && result.code === ErrorCode.ProxyUnavailable;
  const notContacted = ssrfBlocked || proxyUnavailable;
  if (!notContacted) await deps.cache.set(origin, entry, tierLevel);
  if (entry.kind === 'rules' && deps.recordSitemaps) {
    // Called with no sitemaps too: the caller may then look for /sitemap.xml.
    const { sitemaps } = parseRobots(robotsUrlFor(url), entry.body, policy.robots.productToken);
    await deps.recordSitemaps(origin, sitemaps);
  }
  const decision = decide(entry, url, deps.now(), policy.robots);
  if (entry.kind === 'unavailable' && entry.permissive) {
    deps.logger?.warn({ origin, reason: entry.reason, retryAt: new Date(entry.retryAt).toISOString() }, 'robots.txt answered a server error: crawling on as allowed (TRAWL_ROBOTS_SERVER_ERROR=allow)');
  }
  // The host is off limits only when the decision says so (a permissive 5xx is not).
  const failed = decision.verdict === 'unavailable';
  if (failed) deps.counters.add('robotsUnavailable');
  return {
    kind: 'fetched',
    entry,
    crawlDelayMs: decision.verdict === 'allow' ? decision.crawlDelayMs : null,
    responseMs,
    failed,
    ssrfBlocked,
    proxyUnavailable,
    retryAt: entry.kind === 'unavailable' ? entry.retryAt : deps.now(),
    reason: decision.verdict === 'unavailable' ? decision.reason : result.kind === 'error' ? `${result.code}: ${result.message}` : '',
    // A 429 is left out: robots.txt's answer carries no Retry-After here, and a throttled robots.txt is an outage (retried), not a refusal.
    refusal:
      result.kind === 'response' && deps.block !== undefined && result.status !== 429
        ? blockSignalOfResponse({ status: result.status, retryAfter: undefined, location: null, body: result.body }, deps.block)
        : null,
  };
}
