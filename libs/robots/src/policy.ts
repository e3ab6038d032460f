import { ErrorCode } from '@trawl/core';
import { BoundedLru } from './lru.js';
import { originOf, robotsUrlFor } from './origin.js';
import { parseRobots, type RobotsRules } from './parse.js';
import { robotsText } from './text.js';

export interface RobotsOptions {
  /** Our product token in `User-agent:` lines, e.g. 'trawl'. */
  productToken: string;
  /** How long a fetched robots.txt is trusted (RFC 9309 §2.4: at most 24 h; longer is cut to 24 h). */
  ttlMs: number;
  /** First re-fetch delay after a failure; doubles per consecutive failure, capped at ttlMs. */
  retryBaseMs: number;
  /** After failing this long, use the last good copy if there is one (0 = never). */
  outageFallbackMs: number;
  /** Cap on Crawl-delay. */
  maxCrawlDelayMs: number;
  /** Crawl-delay above the cap: clamp it, or skip the host. */
  overCap: 'clamp' | 'skip';
  /**
   * robots.txt answering 5xx: 'disallow' (RFC 9309 §2.3.1.4, the default) or 'allow' — the host is
   * crawled under its last good copy, or as if robots.txt allowed everything, and robots.txt is
   * fetched again after {@link SERVER_ERROR_RETRY_MS}. Absent: 'disallow'.
   */
  serverError?: 'disallow' | 'allow';
}

/** With serverError 'allow': how soon a robots.txt that answered 5xx is fetched again. */
export const SERVER_ERROR_RETRY_MS = 60 * 60 * 1000;

/** The outcome of fetching /robots.txt (after following up to 5 redirects), from the fetch layer. */
export type RobotsFetchOutcome =
  | { kind: 'response'; status: number; body: Buffer; finalUrl: string }
  /** Timeout, connection failure, too many redirects, SSRF refusal… */
  | { kind: 'error'; code: string; message: string };

/** What the cache holds per origin (JSON; validated by `robotsEntrySchema` when read back). */
export type RobotsEntry =
  /** 2xx: the body (first 500 KiB, as UTF-8 text). */
  | { kind: 'rules'; status: number; body: string; fetchedAt: number; expiresAt: number }
  /**
   * RFC 9309 §2.3.1.3 ("unavailable"): 4xx other than 429, or redirects exhausted (§2.3.1.2).
   * `status` is 0 when the fetch layer gave up on redirects without reporting a status.
   */
  | { kind: 'allow-all'; status: number; fetchedAt: number; expiresAt: number }
  /**
   * RFC 9309 §2.3.1.4 ("unreachable" — named `unavailable` here): 5xx, 429, timeout, network
   * error. Everything is disallowed until a fetch succeeds or the outage fallback applies.
   */
  | {
      kind: 'unavailable';
      reason: string;
      /** When the current failure streak began. */
      since: number;
      /** Consecutive failed fetches. */
      failures: number;
      retryAt: number;
      /** The last robots.txt we could read (an allow-all result is kept as an empty body). */
      lastGood: { body: string; fetchedAt: number } | null;
      /** A 5xx under serverError 'allow': URLs are allowed (by `lastGood` when there is one) meanwhile. */
      permissive?: true;
    };

export type RobotsDecision =
  | { verdict: 'allow'; crawlDelayMs: number | null }
  /** The URL is disallowed: record it, never fetch, never retry. */
  | { verdict: 'disallow'; reason: string }
  /** Crawl-delay above the cap with overCap 'skip'. */
  | { verdict: 'skip-host'; reason: string }
  /** robots.txt could not be fetched: treat as disallow-all for now. */
  | { verdict: 'unavailable'; retryAt: number; reason: string };

/** A URL robots.txt refuses for good: recorded as skipped with this code and reason, never fetched, never retried. */
export interface RobotsRefusal {
  code: typeof ErrorCode.RobotsDisallowed | typeof ErrorCode.CrawlDelayTooLong;
  reason: string;
}

/** The refusal a decision makes (a disallowed URL, a host whose Crawl-delay is over the cap), or null. */
export function refusalOf(decision: RobotsDecision): RobotsRefusal | null {
  if (decision.verdict === 'disallow') return { code: ErrorCode.RobotsDisallowed, reason: decision.reason };
  if (decision.verdict === 'skip-host') return { code: ErrorCode.CrawlDelayTooLong, reason: decision.reason };
  return null;
}

/** RFC 9309 §2.4: "Crawlers SHOULD NOT use the cached version for more than 24 hours". */
export const ROBOTS_MAX_TTL_MS = 24 * 60 * 60 * 1000;

const iso = (ms: number): string => (Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));

/**
 * Pure: the new cache entry after a fetch. `previous` carries the last good copy and the failure
 * streak.
 */
export function entryFromFetch(
  outcome: RobotsFetchOutcome,
  previous: RobotsEntry | null,
  now: number,
  options: RobotsOptions,
): RobotsEntry {
  const ttlMs = Math.min(options.ttlMs, ROBOTS_MAX_TTL_MS);
  const allowAll = (status: number): RobotsEntry => ({ kind: 'allow-all', status, fetchedAt: now, expiresAt: now + ttlMs });

  if (outcome.kind === 'response') {
    const { status } = outcome;
    // RFC 9309 §2.3.1.1: the file was fetched; its rules apply.
    if (status >= 200 && status <= 299) {
      return { kind: 'rules', status, body: robotsText(outcome.body), fetchedAt: now, expiresAt: now + ttlMs };
    }
    // RFC 9309 §2.3.1.2: "If there are more than five consecutive redirects, crawlers MAY assume
    // that the robots.txt file is unavailable" — and "unavailable" is §2.3.1.3: allow all. A 3xx
    // reaching here means the fetch layer followed its five hops and was still redirected.
    if (status >= 300 && status <= 399) return allowAll(status);
    // RFC 9309 §2.3.1.3: 4xx means there are no rules for us. 429 is the server asking us to
    // slow down, not a statement about robots.txt: it counts as unreachable (§2.3.1.4).
    if (status >= 400 && status <= 499 && status !== 429) return allowAll(status);
    // RFC 9309 §2.3.1.4: 5xx (and 429, and anything outside 2xx–5xx) means disallow all until
    // robots.txt can be fetched. Unless the crawl chose to read a 5xx as permission: then the
    // host goes on (under its last good copy, if any) and robots.txt is asked again in an hour.
    const entry = unreachable(`HTTP ${status}`, previous, now, options, ttlMs);
    if (status >= 500 && status <= 599 && options.serverError === 'allow') return { ...entry, retryAt: now + SERVER_ERROR_RETRY_MS, permissive: true };
    return entry;
  }
  // The same fact as a 3xx above, reported as an error: it must not get the opposite verdict.
  if (outcome.code === ErrorCode.TooManyRedirects) return allowAll(0);
  // RFC 9309 §2.3.1.4: timeouts, refused connections, DNS and SSRF refusals: unreachable.
  return unreachable(`${outcome.code}: ${outcome.message}`, previous, now, options, ttlMs);
}

function unreachable(reason: string, previous: RobotsEntry | null, now: number, options: RobotsOptions, ttlMs: number): Extract<RobotsEntry, { kind: 'unavailable' }> {
  const streak = previous?.kind === 'unavailable' ? previous : null;
  const failures = (streak?.failures ?? 0) + 1;
  // Exponential back-off per consecutive failure, never longer than a fresh copy would be trusted.
  const delayMs = Math.min(ttlMs, options.retryBaseMs * 2 ** (failures - 1));
  let lastGood: { body: string; fetchedAt: number } | null;
  if (previous?.kind === 'rules') lastGood = { body: previous.body, fetchedAt: previous.fetchedAt };
  // An empty robots.txt allows everything: the faithful copy of an allow-all result.
  else if (previous?.kind === 'allow-all') lastGood = { body: '', fetchedAt: previous.fetchedAt };
  else lastGood = streak?.lastGood ?? null;
  return {
    kind: 'unavailable',
    reason: reason.slice(0, 500),
    since: streak?.since ?? now,
    failures,
    retryAt: now + delayMs,
    lastGood,
  };
}

/** Pure: does the cached entry need a (re)fetch now? (missing, expired, or unavailable with retryAt ≤ now) */
export function needsFetch(entry: RobotsEntry | null, now: number): boolean {
  if (entry === null) return true;
  if (entry.kind === 'unavailable') return entry.retryAt <= now;
  return entry.expiresAt <= now;
}

/**
 * Parsed rules by origin, fetch time and token, so a host's robots.txt is parsed once and not per
 * URL. Bounded by count and by body size; the body itself is compared on a hit, so two entries that
 * share a fetch time can never be confused.
 */
const parsed = new BoundedLru<string, { body: string; rules: RobotsRules }>(256, 32 * 1024 * 1024, (v) => v.body.length + 256);

function rulesFor(url: string, body: string, fetchedAt: number, productToken: string): RobotsRules {
  const origin = originOf(url);
  const key = `${origin} ${fetchedAt} ${productToken}`;
  const hit = parsed.get(key);
  if (hit !== undefined && hit.body === body) return hit.rules;
  const rules = parseRobots(robotsUrlFor(origin), body, productToken);
  parsed.set(key, { body, rules });
  return rules;
}

function judge(rules: RobotsRules, url: string, options: RobotsOptions, source: string): RobotsDecision {
  const delayMs = rules.crawlDelayMs;
  if (delayMs !== null && delayMs > options.maxCrawlDelayMs && options.overCap === 'skip') {
    // Checked before the URL itself so every URL of the host gets the same verdict.
    return { verdict: 'skip-host', reason: `robots.txt Crawl-delay ${delayMs / 1000}s exceeds the cap of ${options.maxCrawlDelayMs} ms${source}` };
  }
  if (!rules.isAllowed(url)) {
    const rule = rules.matchingRule(url);
    const why = rule === null ? 'not on this origin' : `Disallow: ${rule.pattern}`;
    return { verdict: 'disallow', reason: `robots.txt ${why}${source}` };
  }
  return { verdict: 'allow', crawlDelayMs: delayMs === null ? null : Math.min(delayMs, options.maxCrawlDelayMs) };
}

/**
 * Pure (apart from the parse cache): may `url` be fetched under this cached robots.txt entry?
 * Expiry is not checked here (see `needsFetch`): a stale entry still answers until it is refreshed.
 */
export function decide(entry: RobotsEntry, url: string, now: number, options: RobotsOptions): RobotsDecision {
  switch (entry.kind) {
    case 'allow-all':
      return { verdict: 'allow', crawlDelayMs: null };
    case 'rules':
      return judge(rulesFor(url, entry.body, entry.fetchedAt, options.productToken), url, options, '');
    case 'unavailable': {
      if (entry.permissive) {
        const answered = ` (robots.txt answered ${entry.reason} since ${iso(entry.since)}; TRAWL_ROBOTS_SERVER_ERROR=allow)`;
        if (entry.lastGood === null) return { verdict: 'allow', crawlDelayMs: null };
        return judge(rulesFor(url, entry.lastGood.body, entry.lastGood.fetchedAt, options.productToken), url, options, answered);
      }
      // RFC 9309 §2.3.1.4: "If the robots.txt file is unreachable for more than 30 days, crawlers
      // MAY … continue to use a cached copy." outageFallbackMs is that period, configurable.
      const { lastGood } = entry;
      if (options.outageFallbackMs > 0 && lastGood !== null && now - entry.since >= options.outageFallbackMs) {
        const source = ` (copy of ${iso(lastGood.fetchedAt)}; robots.txt unreachable since ${iso(entry.since)})`;
        return judge(rulesFor(url, lastGood.body, lastGood.fetchedAt, options.productToken), url, options, source);
      }
      return {
        verdict: 'unavailable',
        retryAt: entry.retryAt,
        reason: `robots.txt unreachable (${entry.reason}; ${entry.failures} failure${entry.failures === 1 ? '' : 's'} since ${iso(entry.since)})`,
      };
    }
  }
}
