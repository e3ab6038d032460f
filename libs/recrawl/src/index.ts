/**
 * When to fetch a page again (seed: "Refinement 8 — Freshness and Re-Crawl Scheduling").
 * The interval tracks an exponential moving average of observed change intervals, clamped to
 * [min, max], with ±jitter so pages crawled together do not come due together.
 */
export interface RecrawlOptions {
  /** EMA smoothing: higher reacts faster to recent changes. */
  alpha: number;
  minIntervalS: number;
  maxIntervalS: number;
  /** Interval assumed for a page seen for the first time. */
  initialIntervalS: number;
  /** ±fraction of the interval added at random. */
  jitter: number;
}

export const DEFAULT_RECRAWL: RecrawlOptions = {
  alpha: 0.3,
  minIntervalS: 3_600,
  maxIntervalS: 2_592_000,
  initialIntervalS: 86_400,
  jitter: 0.1,
};

/** What the record of a page held before this fetch (null for a first fetch). */
export interface PageHistory {
  contentHash: string | null;
  changeFrequencyS: number | null;
  lastChangedAt: number | null;
}

export interface RecrawlDecision {
  changed: boolean;
  changeFrequencyS: number;
  lastChangedAt: number;
  nextCrawlAt: number;
}

export function nextCrawl(
  previous: PageHistory | null,
  contentHash: string | null,
  now: number,
  options: RecrawlOptions = DEFAULT_RECRAWL,
  random: () => number = Math.random,
): RecrawlDecision {
  const clamp = (s: number) => Math.min(options.maxIntervalS, Math.max(options.minIntervalS, s));
  let changeFrequencyS = previous?.changeFrequencyS ?? options.initialIntervalS;
  let lastChangedAt = previous?.lastChangedAt ?? now;
  const changed = previous === null || previous.contentHash !== contentHash;
  if (previous !== null && changed) {
    const intervalS = Math.max(0, (now - (previous.lastChangedAt ?? now)) / 1000);
    changeFrequencyS = options.alpha * intervalS + (1 - options.alpha) * changeFrequencyS;
    lastChangedAt = now;
  }
  const base = clamp(changeFrequencyS);
  const jittered = base * (1 + options.jitter * (2 * random() - 1));
  return { changed, changeFrequencyS: Math.round(changeFrequencyS), lastChangedAt, nextCrawlAt: now + Math.round(jittered * 1000) };
}
