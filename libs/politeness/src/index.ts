/**
 * How long to leave a host alone after a fetch (DESIGN "Invariants — Politeness"; issue 3).
 *
 *   delay = min(maxDelay, max(minDelay, robots Crawl-delay, back-off, adaptiveFactor × last response time))
 *
 * Heritrix's reference point is 5 × the last fetch's duration: a slow host is a loaded host.
 * Back-off grows exponentially (with jitter) while a host keeps failing or throttling, and
 * halves with each success, so one good response does not undo a bad spell. A server's
 * Retry-After is honoured on top of all this (up to its own cap). Everything here is pure.
 */
export interface PolitenessOptions {
  minDelayMs: number;
  maxDelayMs: number;
  /** × the last response time (0 turns the adaptive term off). */
  adaptiveFactor: number;
  /** First back-off after a failure; doubles per consecutive failure. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Longest Retry-After honoured. */
  maxRetryAfterMs: number;
}

export const DEFAULT_POLITENESS: PolitenessOptions = {
  minDelayMs: 1000,
  maxDelayMs: 60_000,
  adaptiveFactor: 5,
  backoffBaseMs: 5000,
  backoffMaxMs: 600_000,
  maxRetryAfterMs: 3_600_000,
};

/** A host's health, kept in Redis with its due time so every worker sees the same. */
export interface HostHealth {
  /** Consecutive failed or throttled fetches. */
  streak: number;
  /** Current back-off term of the delay. */
  backoffMs: number;
}

export const HEALTHY: HostHealth = { streak: 0, backoffMs: 0 };

export type FetchOutcomeKind =
  /** A response the crawl could use (2xx, 3xx, 4xx other than 408/425/429). */
  | 'success'
  /** 429, or 503 (the server asked us to slow down). */
  | 'throttled'
  /** 5xx, timeouts, resets, refused connections. */
  | 'error';

export function nextHealth(
  previous: HostHealth,
  outcome: FetchOutcomeKind,
  options: PolitenessOptions,
  random: () => number = Math.random,
): HostHealth {
  if (outcome === 'success') {
    if (previous.backoffMs === 0 && previous.streak === 0) return HEALTHY;
    const halved = Math.floor(previous.backoffMs / 2);
    return { streak: 0, backoffMs: halved < options.minDelayMs ? 0 : halved };
  }
  const streak = previous.streak + 1;
  const exponential = Math.min(options.backoffMaxMs, options.backoffBaseMs * 2 ** (streak - 1));
  // Jitter in [0.75, 1.25) so hosts that failed together do not come back together.
  const jittered = Math.min(options.backoffMaxMs, Math.round(exponential * (0.75 + random() / 2)));
  return { streak, backoffMs: Math.max(previous.backoffMs, jittered) };
}

export interface DelayInput {
  /** Robots Crawl-delay (already capped by the robots policy), if any. */
  crawlDelayMs: number | null;
  health: HostHealth;
  /** Duration of the fetch that just ended, if there was one. */
  lastResponseMs: number | null;
}

export function hostDelayMs(input: DelayInput, options: PolitenessOptions): number {
  const adaptive = input.lastResponseMs === null ? 0 : options.adaptiveFactor * input.lastResponseMs;
  const wanted = Math.max(options.minDelayMs, input.crawlDelayMs ?? 0, input.health.backoffMs, adaptive);
  return Math.round(Math.min(options.maxDelayMs, wanted));
}

/**
 * Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Returns the epoch ms it
 * names, capped at `maxRetryAfterMs` from now; null when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number, maxRetryAfterMs: number): number | null {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return null;
  let at: number;
  if (/^\d+$/.test(raw)) at = now + Number(raw) * 1000;
  else {
    // An HTTP-date always names its day and month in letters; "-5" is not one.
    if (!/[a-z]/i.test(raw)) return null;
    const date = Date.parse(raw);
    if (Number.isNaN(date)) return null;
    at = date;
  }
  return Math.min(Math.max(at, now), now + maxRetryAfterMs);
}

/**
 * When the host may be fetched next: now + the delay, but never before a Retry-After. The
 * result never moves a host's due time backwards (the frontier also enforces that).
 */
export function nextDueAt(now: number, delayMs: number, retryAfterAt: number | null): number {
  return Math.max(now + delayMs, retryAfterAt ?? 0);
}
