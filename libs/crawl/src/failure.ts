import { describeError, ErrorCode, isTrawlError, TrawlError } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import { retryDecision } from '@trawl/politeness';
import type { Attempt } from './attempt.js';
import type { PipelineDeps } from './deps.js';
import type { HostRelease, JobOutcome } from './outcome.js';
import { recordOf } from './record.js';

/** Recorded on purpose, never retried (robots, scope, SSRF, content type, …): the job completes. */
export function skipOutcome(
  deps: Pick<PipelineDeps, 'clock'>,
  attempt: Attempt,
  code: string,
  reason: string,
  release?: HostRelease,
  response: FetchResult | null = null,
): JobOutcome {
  return {
    release,
    record: recordOf(attempt, { state: 'skipped', at: deps.clock.now(), errorCode: code, errorMessage: reason }, response),
    ack: true,
    result: { outcome: 'done', summary: { skipped: code } },
  };
}

/**
 * The one place an error becomes an outcome. What the error's action says:
 * - `skip`: recorded as skipped, never retried;
 * - `retry` (and any error that is not trawl's own): tried again through the gate after the URL's
 *   retry delay while its tries last (fewer after timeouts or robots.txt outages; never sooner
 *   than a server's Retry-After), its lease kept alive until the retry has had its chance; then
 *   recorded as failed and dead-lettered with its reason;
 * - `fail`: recorded as failed and dead-lettered at once;
 * - `fatal`: thrown, so the worker stops taking jobs (the job waits for a healthy worker).
 * `release` is the host's fate, decided by the caller from what happened on the wire (absent:
 * the host was released already, or never held).
 */
export function failOutcome(
  deps: Pick<PipelineDeps, 'clock' | 'counters' | 'logger' | 'retry' | 'leaseMs'>,
  attempt: Attempt,
  error: unknown,
  response: FetchResult | null,
  release?: HostRelease,
): JobOutcome {
  const { clock, counters } = deps;
  const action = isTrawlError(error) ? error.action : 'retry';
  if (action === 'fatal') throw error;
  const reason = describeError(error);
  const code = isTrawlError(error) ? error.code : ErrorCode.FetchNetwork;
  const now = clock.now();
  if (action === 'skip') return skipOutcome(deps, attempt, code, reason, release, response);
  const tries = { ...deps.retry, attempts: Math.min(attempt.maxAttempts, deps.retry.attempts) };
  const decision = action === 'retry' ? retryDecision({ code, attempt: attempt.attempt, retryAt: isTrawlError(error) ? error.retryAt : undefined }, tries, now) : null;
  if (decision?.kind === 'retry') {
    const { delayMs } = decision;
    counters.add('retries');
    deps.logger.debug({ url: attempt.job.url, attempt: attempt.attempt, delayMs, reason }, 'will retry');
    return { release, leaseUntil: now + delayMs + deps.leaseMs, ack: false, result: { outcome: 'retry', reason, delayMs } };
  }
  counters.add('dead');
  deps.logger.warn({ url: attempt.job.url, attempts: attempt.attempt, reason }, 'giving up on URL (dead-lettered)');
  return {
    release,
    record: recordOf(attempt, { state: 'failed', at: now, errorCode: code, errorMessage: reason }, response),
    ack: true,
    result: { outcome: 'dead', reason: `${reason} (after ${attempt.attempt} attempt${attempt.attempt === 1 ? '' : 's'})` },
  };
}

/**
 * Store or database trouble after a good fetch (the host is released already): an error of the
 * store or PostgreSQL that is not trawl's own is retried like any transient failure.
 */
export function processingFailed(deps: Pick<PipelineDeps, 'clock' | 'counters' | 'logger' | 'retry' | 'leaseMs'>, attempt: Attempt, error: unknown): JobOutcome {
  deps.logger.warn({ err: error, url: attempt.job.url, attempt: attempt.attempt }, 'processing failed after fetch');
  const failure = isTrawlError(error) ? error : new TrawlError(ErrorCode.Store, describeError(error), { action: 'retry', cause: error });
  return failOutcome(deps, attempt, failure, null);
}
