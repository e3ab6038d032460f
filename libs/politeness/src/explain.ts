import { baseDelayMs, type DelayInput, hostDelayMs, type PolitenessOptions, responseSignalMs } from './delay.js';

/**
 * Which term of the delay formula is in force for a host (see `hostDelayMs`):
 *   default      the configured delay (no Crawl-delay, or TRAWL_DELAY_FORCE made it the floor)
 *   crawl-delay  the host's robots.txt Crawl-delay (raised to the floor, cut to the cap)
 *   backoff      the host's back-off after throttling or failures
 *   adaptive     the adaptive factor × the host's response time
 *   capped       the largest term exceeded the maximum delay, which applies instead
 */
export type DelayReason = 'default' | 'crawl-delay' | 'backoff' | 'adaptive' | 'capped';

export interface DelayExplanation {
  delayMs: number;
  reason: DelayReason;
  /** Every term, for operators to see how close the others are. */
  terms: { baseMs: number; base: 'default' | 'crawl-delay'; backoffMs: number; adaptiveMs: number; maxDelayMs: number };
}

/**
 * Pure: the delay `hostDelayMs` gives for this input, and why. Ties go to the base delay (the
 * host would wait that long anyway), then to back-off.
 */
export function explainDelay(input: DelayInput, options: PolitenessOptions): DelayExplanation {
  const baseMs = baseDelayMs(input.crawlDelayMs, options);
  const statedMs = input.crawlDelayMs !== null && input.crawlDelayMs > 0 ? Math.min(input.crawlDelayMs, options.maxCrawlDelayMs) : null;
  // With forceDelay, a shorter Crawl-delay leaves the configured delay in force.
  const base = statedMs === null || (options.forceDelay && statedMs < options.minDelayMs) ? 'default' : 'crawl-delay';
  const backoffMs = input.health.backoffMs;
  const adaptiveMs = options.adaptiveFactor * responseSignalMs(input.earlierResponseMs ?? [], input.lastResponseMs, options);
  const delayMs = hostDelayMs(input, options);
  const wanted = Math.max(baseMs, backoffMs, adaptiveMs);
  let reason: DelayReason;
  if (wanted > options.maxDelayMs) reason = 'capped';
  else if (baseMs >= backoffMs && baseMs >= adaptiveMs) reason = base;
  else reason = backoffMs >= adaptiveMs ? 'backoff' : 'adaptive';
  return { delayMs, reason, terms: { baseMs, base, backoffMs, adaptiveMs: Math.round(adaptiveMs), maxDelayMs: options.maxDelayMs } };
}
