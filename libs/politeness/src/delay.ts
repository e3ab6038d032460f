import type { HostHealth } from './health.js';

/**
 * How long to leave a host alone after a fetch:
 *
 *   delay = min(maxDelay, max(base, back-off, adaptiveFactor × the host's response time))
 *   base  = the robots.txt Crawl-delay when it states one (≥ crawlDelayFloor, ≤ maxCrawlDelay),
 *           else minDelay; with forceDelay, never less than minDelay either way.
 *
 * A Crawl-delay replaces the configured delay rather than only lengthening it: a site that says
 * 0.5 s is fetched every 0.5 s, not every second. That is StormCrawler's default
 * (`fetcher.server.delay.force: false`); Nutch replaces it too, but by default never below its
 * own delay (`fetcher.min.crawl.delay`), which `forceDelay` reproduces. Heritrix's reference
 * point for the adaptive term is 5 × the fetch's duration: a slow host is a loaded host. Here
 * one slow URL is not taken for a loaded host: each response counts at most
 * `adaptiveResponseCapMs`, and the term follows the lower median of the host's last few
 * response times, so it takes several slow answers to slow the host down. Everything here is pure.
 */
export interface PolitenessOptions {
  /**
   * The delay of a host whose robots.txt names no Crawl-delay; with `forceDelay`, the least
   * delay of every host.
   */
  minDelayMs: number;
  /** A stated Crawl-delay shorter than this (but above 0) is raised to it. */
  crawlDelayFloorMs: number;
  /** A stated Crawl-delay longer than this is cut to it (the robots policy may skip the host instead). */
  maxCrawlDelayMs: number;
  /** true: `minDelayMs` applies to every host and a Crawl-delay can only lengthen it. */
  forceDelay: boolean;
  maxDelayMs: number;
  /** × the host's response time (0 turns the adaptive term off). */
  adaptiveFactor: number;
  /** The most one response time counts for in the adaptive term. */
  adaptiveResponseCapMs: number;
  /** The adaptive term follows the lower median of the host's last this-many response times. */
  adaptiveSamples: number;
  /** First back-off after a failure; doubles per consecutive failure. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Longest Retry-After honoured. */
  maxRetryAfterMs: number;
  /**
   * A URL-local failure backs the host off only when it makes this many failures in a row at
   * the host (1: every failure counts as the host's). See `FetchOutcomeKind`.
   */
  hostFailureThreshold: number;
}

export const DEFAULT_POLITENESS: Readonly<PolitenessOptions> = Object.freeze({
  minDelayMs: 1000,
  crawlDelayFloorMs: 250,
  maxCrawlDelayMs: 30_000,
  forceDelay: false,
  maxDelayMs: 60_000,
  adaptiveFactor: 5,
  adaptiveResponseCapMs: 5000,
  adaptiveSamples: 3,
  backoffBaseMs: 5000,
  backoffMaxMs: 600_000,
  maxRetryAfterMs: 3_600_000,
  hostFailureThreshold: 3,
});

/**
 * The host's delay before back-off and response times: its robots.txt Crawl-delay, or the
 * configured delay when it states none. A Crawl-delay of 0 states none (StormCrawler and Nutch
 * read it so too).
 */
export function baseDelayMs(crawlDelayMs: number | null, options: PolitenessOptions): number {
  if (crawlDelayMs === null || !(crawlDelayMs > 0)) return options.minDelayMs;
  const stated = Math.min(crawlDelayMs, options.maxCrawlDelayMs);
  return options.forceDelay ? Math.max(options.minDelayMs, stated) : Math.max(options.crawlDelayFloorMs, stated);
}

/**
 * The response time the adaptive term multiplies: the lower median of the host's last
 * `adaptiveSamples` response times (earlier ones, then the last), each capped at
 * `adaptiveResponseCapMs`. With three samples, one slow answer among fast ones changes nothing;
 * two of three make it. 0 when there is no sample.
 */
export function responseSignalMs(earlierMs: readonly number[], lastMs: number | null, options: PolitenessOptions): number {
  const all = lastMs === null ? [...earlierMs] : [...earlierMs, lastMs];
  const samples = all.slice(-Math.max(1, options.adaptiveSamples)).map((ms) => Math.min(Math.max(0, ms), options.adaptiveResponseCapMs));
  if (samples.length === 0) return 0;
  samples.sort((a, b) => a - b);
  return samples[Math.floor((samples.length - 1) / 2)] as number;
}

/**
 * What to keep of a host's response times for its next delay: the last `adaptiveSamples − 1`
 * (the next response completes the window). A fetch without a response adds nothing.
 */
export function rememberResponseMs(earlierMs: readonly number[], lastMs: number | null, options: PolitenessOptions): number[] {
  const keep = Math.max(0, options.adaptiveSamples - 1);
  if (keep === 0) return [];
  const all = lastMs === null ? [...earlierMs] : [...earlierMs, lastMs];
  return all.slice(-keep);
}

/**
 * The time a response says about the server's load: from the request to its response headers
 * (what a loaded server delays), not to the body's last byte (which measures the body's size and
 * the path's bandwidth, or a tarpit's patience). Scrapy's AutoThrottle measures the same
 * latency. Falls back to the whole fetch when the headers' time is unknown.
 */
export function responseTimeMs(timing: { startedAt: number; firstByteAt: number | null; endedAt: number }): number {
  return Math.max(0, (timing.firstByteAt ?? timing.endedAt) - timing.startedAt);
}

export interface DelayInput {
  /** robots.txt Crawl-delay for our token, if it states one. */
  crawlDelayMs: number | null;
  health: HostHealth;
  /** Response time (see `responseTimeMs`) of the fetch that just ended; null when nothing answered. */
  lastResponseMs: number | null;
  /** The host's earlier response times, oldest first, as `rememberResponseMs` keeps them (absent: none known). */
  earlierResponseMs?: readonly number[];
}

export function hostDelayMs(input: DelayInput, options: PolitenessOptions): number {
  const adaptive = options.adaptiveFactor * responseSignalMs(input.earlierResponseMs ?? [], input.lastResponseMs, options);
  const wanted = Math.max(baseDelayMs(input.crawlDelayMs, options), input.health.backoffMs, adaptive);
  return Math.round(Math.min(options.maxDelayMs, wanted));
}
