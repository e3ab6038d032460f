import { describeError, ErrorCode, isTrawlError } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import type { FetchJobContext, JobResult } from '@trawl/queue';
import { fingerprint } from '@trawl/url';
import type { PipelineDeps } from './process.js';
import type { FetchRecord } from './records.js';
import { errorAction, retryDelayMs } from './retry.js';

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
export async function skipUrl(deps: PipelineDeps, job: FetchJobContext, leaseId: string, code: string, reason: string): Promise<JobResult> {
  await deps.records.add(outcomeRecord(job, 'skipped', code, reason, deps.clock.now(), null));
  await deps.acks.ack(job.data.p, leaseId);
  return { outcome: 'done', summary: { skipped: code } };
}

/**
 * A URL that could not be fetched: retry (through the gate, after `delayMs`) while attempts
 * remain, else record the failure and dead-letter it with its reason. `release` frees the host
 * (the caller has decided its due time); for a retry it also keeps the lease alive until the
 * retry has had its chance.
 */
export async function failUrl(
  deps: PipelineDeps,
  job: FetchJobContext,
  leaseId: string,
  error: unknown,
  response: FetchResult | null,
  release: (leaseUntil?: number) => Promise<void>,
): Promise<JobResult> {
  const { clock, counters } = deps;
  const action = errorAction(error);
  const reason = describeError(error);
  const code = isTrawlError(error) ? error.code : ErrorCode.FetchNetwork;
  const now = clock.now();
  if (action === 'skip') {
    await release();
    await deps.records.add(outcomeRecord(job, 'skipped', code, reason, now, response));
    await deps.acks.ack(job.data.p, leaseId);
    return { outcome: 'done', summary: { skipped: code } };
  }
  if (action === 'retry' && job.attempt < job.maxAttempts) {
    const retryAt = isTrawlError(error) ? error.retryAt : undefined;
    const delayMs = retryDelayMs(job.attempt, deps.retry, now, retryAt);
    await release(now + delayMs + deps.leaseMs);
    counters.add('retries');
    deps.logger.debug({ url: job.data.u, attempt: job.attempt, delayMs, reason }, 'will retry');
    return { outcome: 'retry', reason, delayMs };
  }
  await release();
  await deps.records.add(outcomeRecord(job, 'failed', code, reason, now, response));
  await deps.acks.ack(job.data.p, leaseId);
  counters.add('dead');
  deps.logger.warn({ url: job.data.u, attempts: job.attempt, reason }, 'giving up on URL (dead-lettered)');
  return { outcome: 'dead', reason: `${reason} (after ${job.attempt} attempt${job.attempt === 1 ? '' : 's'})` };
}
