import { describeError, ErrorCode, isTrawlError } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import type { FetchJobContext } from '@trawl/queue';
import { fingerprint } from '@trawl/url';
import type { HostRelease, JobOutcome } from './outcome.js';
import type { PipelineDeps } from './process.js';
import type { FetchRecord } from './records.js';
import { retryDecision } from '@trawl/politeness';
import { errorAction } from './retry.js';

/** A record for a URL that produced no page (failed, skipped, disallowed). */
export function outcomeRecord(
  job: FetchJobContext,
  state: 'failed' | 'skipped',
  code: string,
  message: string,
  fetchedAt: number,
  response: FetchResult | null,
): FetchRecord {
  return {
    hash: fingerprint(job.data.u),
    url: job.data.u,
    host: job.data.h,
    depth: job.data.d,
    state,
    httpStatus: response?.status ?? null,
    contentType: response?.contentType ?? null,
    contentHash: null,
    storageKey: null,
    fetchedAt: response?.startedAt ?? fetchedAt,
    contentLength: response?.body.length ?? null,
    truncated: response?.truncated ?? false,
    fetchMs: response ? response.endedAt - response.startedAt : null,
    redirectTo: null,
    canonicalUrl: null,
    linksFound: null,
    errorCode: code,
    errorMessage: message.slice(0, 1000),
    etag: null,
    lastModified: null,
    charset: null,
    noindex: false,
    nofollow: false,
    bodySkipped: response?.bodySkipped ?? false,
  };
}

/** Recorded on purpose, never retried (robots, scope, SSRF, content type, …): the job completes. */
export function skipOutcome(
  deps: Pick<PipelineDeps, 'clock'>,
  job: FetchJobContext,
  code: string,
  reason: string,
  release?: HostRelease,
  response: FetchResult | null = null,
): JobOutcome {
  return {
    release,
    record: outcomeRecord(job, 'skipped', code, reason, deps.clock.now(), response),
    ack: true,
    result: { outcome: 'done', summary: { skipped: code } },
  };
}

/**
 * A URL that could not be fetched: retry (through the gate, after the retry delay) while
 * attempts remain — keeping its lease alive until the retry has had its chance — else record
 * the failure and dead-letter it with its reason. `release` is the host's fate, decided by the
 * caller from what happened on the wire.
 */
export function failOutcome(
  deps: Pick<PipelineDeps, 'clock' | 'counters' | 'logger' | 'retry' | 'leaseMs'>,
  job: FetchJobContext,
  error: unknown,
  response: FetchResult | null,
  release?: HostRelease,
): JobOutcome {
  const { clock, counters } = deps;
  const action = errorAction(error);
  const reason = describeError(error);
  const code = isTrawlError(error) ? error.code : ErrorCode.FetchNetwork;
  const now = clock.now();
  if (action === 'skip') return skipOutcome(deps, job, code, reason, release, response);
  // A URL's own retry schedule: fewer tries after timeouts (each held its host up to the
  // deadline), and a delay that never moves its host's due time.
  const decision =
    action === 'retry'
      ? retryDecision({ code, attempt: job.attempt, retryAt: isTrawlError(error) ? error.retryAt : undefined }, { ...deps.retry, attempts: Math.min(job.maxAttempts, deps.retry.attempts) }, now)
      : null;
  if (decision?.kind === 'retry') {
    const { delayMs } = decision;
    counters.add('retries');
    deps.logger.debug({ url: job.data.u, attempt: job.attempt, delayMs, reason }, 'will retry');
    return { release, leaseUntil: now + delayMs + deps.leaseMs, ack: false, result: { outcome: 'retry', reason, delayMs } };
  }
  counters.add('dead');
  deps.logger.warn({ url: job.data.u, attempts: job.attempt, reason }, 'giving up on URL (dead-lettered)');
  return {
    release,
    record: outcomeRecord(job, 'failed', code, reason, now, response),
    ack: true,
    result: { outcome: 'dead', reason: `${reason} (after ${job.attempt} attempt${job.attempt === 1 ? '' : 's'})` },
  };
}
