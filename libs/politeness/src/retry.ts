import { ErrorCode } from '@trawl/core';

/**
 * When a URL that failed transiently is tried again: its own schedule, apart from its host's.
 * The host's due time comes from the politeness model (`nextHealth`, `hostDelayMs`); the URL's
 * retry delay only says when this URL may queue for the host again, so a URL deep in its retries
 * never slows its host's other pages. Pure.
 */
export interface RetryPolicy {
  /** Tries per URL for transient failures (the first try included). */
  attempts: number;
  /**
   * Tries per URL when the last one timed out. Each such try held the host for up to the
   * fetch deadline, so a URL that keeps timing out gets fewer.
   */
  timeoutAttempts: number;
  /**
   * Tries per URL when its host's robots.txt was unavailable. Each such try waits for the next
   * robots.txt try (a minute, doubling), so four of them would hold the URL — and the crawl's
   * end — for minutes over a host that is down; the re-crawl tries the page again later.
   * Absent: `attempts`.
   */
  robotsAttempts?: number;
  /** Delay before the first retry; doubles per attempt. */
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({ attempts: 4, timeoutAttempts: 2, robotsAttempts: 2, baseMs: 5000, maxMs: 600_000 });

/** How many tries a URL gets when its last one failed with `code` (an error code). */
export function attemptsFor(code: string, policy: RetryPolicy): number {
  if (code === ErrorCode.FetchTimeout) return Math.min(policy.attempts, policy.timeoutAttempts);
  if (code === ErrorCode.RobotsUnavailable) return Math.min(policy.attempts, policy.robotsAttempts ?? policy.attempts);
  return policy.attempts;
}

/**
 * Delay before retry number `attempt` (1 = the first retry): exponential with jitter in
 * [½·d, d], capped; a server-given time (Retry-After) wins when later.
 */
export function urlRetryDelayMs(attempt: number, policy: RetryPolicy, now: number, retryAt?: number, random: () => number = Math.random): number {
  const exponential = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.round(exponential * (0.5 + random() / 2));
  const serverSays = retryAt === undefined ? 0 : Math.max(0, retryAt - now);
  return Math.min(policy.maxMs, Math.max(jittered, serverSays));
}

export type RetryDecision =
  /** Queue the URL again after `delayMs` (it waits for its host's turn as well). */
  | { kind: 'retry'; delayMs: number }
  /** Out of tries: record the failure and dead-letter the URL. */
  | { kind: 'give-up'; attempts: number };

export interface TransientFailure {
  /** The error code of the failure (`ERR_FETCH_TIMEOUT`, `ERR_HTTP_5XX`, …). */
  code: string;
  /** The try that just failed, 1-based. */
  attempt: number;
  /** A server-given time to come back (Retry-After), epoch ms. */
  retryAt?: number;
}

/** Whether and when a URL whose try failed transiently (error action `retry`) is tried again. */
export function retryDecision(failure: TransientFailure, policy: RetryPolicy, now: number, random: () => number = Math.random): RetryDecision {
  const attempts = attemptsFor(failure.code, policy);
  if (failure.attempt >= attempts) return { kind: 'give-up', attempts: failure.attempt };
  return { kind: 'retry', delayMs: urlRetryDelayMs(failure.attempt, policy, now, failure.retryAt, random) };
}
