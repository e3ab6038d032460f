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
