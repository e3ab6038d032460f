import { type Clock, describeError, ErrorCode, isTrawlError, TrawlError } from '@trawl/core';
import type { FetchResult, Fetcher } from '@trawl/fetch';
import { type Frontier, type GateTicket, UrlFlag } from '@trawl/frontier';
import type { FetchJobContext, JobResult } from '@trawl/queue';
import type { ContentStore } from '@trawl/store';
import type { Logger } from '@trawl/telemetry';
import { fingerprint, hostOf, inScope, normalizeUrl } from '@trawl/url';
import type { Counters } from './counters.js';
import { type Candidate, candidatesFromLinks, type Discovery } from './discovery.js';
import type { PolicyFollower, ResolvedPolicy } from './policy.js';
import type { Acks, FetchRecord, Records } from './records.js';
import { classifyStatus, errorAction, type RetryOptions, retryDelayMs } from './retry.js';
import { decodeBody, isHtml, parseLinks, storeBody } from './stages.js';

export interface PipelineDeps {
  frontier: Frontier;
  fetcher: Fetcher;
  store: ContentStore;
  discovery: Discovery;
  records: Records;
  acks: Acks;
  policy: PolicyFollower;
  counters: Counters;
  clock: Clock;
  logger: Logger;
  retry: RetryOptions;
  leaseMs: number;
}

/**
 * The politeness delay after a fetch from a host. Issue-3 work extends this into the full model
 * (robots Crawl-delay, back-off, adaptive factor); today it is the configured minimum.
 */
export function hostDelayMs(policy: ResolvedPolicy): number {
  return policy.policy.minDelayMs;
}

/**
 * One fetch job from start to finish: gate → fetch → release the host → store → parse →
 * discover → record → acknowledge the lease. Returns the decision for the queue; every failure
 * is turned into retry / dead / done here and nowhere else.
 */
export async function processFetchJob(deps: PipelineDeps, job: FetchJobContext): Promise<JobResult> {
  const { frontier, clock, counters } = deps;
  const { data } = job;
  const policy = await deps.policy.get();
  if (!policy) return { outcome: 'defer', until: clock.now() + 1000 };

  const ticket: GateTicket = {
    partition: data.p,
    host: data.h,
    leaseId: data.l ?? `job-${job.id}`,
    token: job.token,
    band: data.b,
    entry: { url: data.u, depth: data.d, hops: data.x, flags: data.f },
  };
  const gate = await frontier.acquire(ticket);
  if (gate.kind === 'stale') {
    counters.add('stale');
    return { outcome: 'stale' };
  }
  if (gate.kind !== 'ok') {
    counters.add('deferred');
    return { outcome: 'defer', until: gate.at };
  }

  // The host is ours until release; release exactly once, whatever happens.
  let released = false;
  const release = async (leaseUntil = 0) => {
    if (released) return;
    released = true;
    await frontier.release(ticket, clock.now() + hostDelayMs(policy), leaseUntil);
  };

  let response: FetchResult;
  try {
    response = await deps.fetcher.fetch(data.u, { signal: job.signal });
  } catch (error) {
    counters.add('fetchErrors');
    return fail(deps, job, ticket, error, release, null);
  }

  const status = classifyStatus(response.status, response.location !== null);
  counters.add(`status${Math.min(5, Math.floor(response.status / 100))}xx` as 'status2xx');
  if (status === 'retry') {
    const error = new TrawlError(response.status === 429 ? ErrorCode.HttpThrottled : ErrorCode.HttpServerError, `HTTP ${response.status}`, {
      action: 'retry',
    });
    return fail(deps, job, ticket, error, release, response);
  }
  await release();
  counters.add('fetched');
  counters.add('bytes', response.rawBytes || response.body.length);

  try {
    return await handleResponse(deps, job, ticket, policy, response, status);
  } catch (error) {
    // Store or database trouble after a good fetch: try the whole job again later.
    if (job.attempt < job.maxAttempts) {
      const delayMs = retryDelayMs(job.attempt, deps.retry, clock.now());
      counters.add('retries');
      deps.logger.warn({ err: error, url: data.u }, 'processing failed after fetch; retrying');
      return { outcome: 'retry', reason: describeError(error), delayMs };
    }
    throw error;
  }
}

async function handleResponse(
  deps: PipelineDeps,
  job: FetchJobContext,
  ticket: GateTicket,
  policy: ResolvedPolicy,
  response: FetchResult,
  status: ReturnType<typeof classifyStatus>,
): Promise<JobResult> {
  const { data } = job;
  const hash = fingerprint(data.u);
  let stored: Awaited<ReturnType<typeof storeBody>> | null = null;
  let candidates: Candidate[] = [];
  let canonical: string | null = null;
  let redirectTo: string | null = null;
  let errorCode: string | null = null;
  let linksFound: number | null = null;

  if (status === 'ok') {
    if (response.body.length > 0) stored = await storeBody(deps.store, response.body);
    if (isHtml(response)) {
      const parsed = parseLinks(decodeBody(response.body, response.charset), data.u, policy.policy.maxLinksPerPage);
      linksFound = parsed.links.length;
      deps.counters.add('linksFound', parsed.links.length);
      canonical = parsed.page.canonical;
      if (!parsed.page.metaRobots.nofollow) {
        candidates = candidatesFromLinks(parsed.links, { url: data.u, hash, depth: data.d }, policy, deps.counters);
      }
    }
  } else if (status === 'redirect' && response.location) {
    deps.counters.add('redirects');
    const target = redirectCandidate(response.location, data, hash, policy);
    if ('error' in target) errorCode = target.error;
    else {
      redirectTo = target.url;
      if (target.inScope) candidates = [target.candidate];
      else deps.counters.add('outOfScope');
    }
  }

  const record: FetchRecord = {
    hash,
    url: data.u,
    host: data.h,
    depth: data.d,
    state: 'done',
    httpStatus: response.status,
    contentType: response.contentType,
    contentHash: stored?.contentHash ?? null,
    storageKey: stored?.storageKey ?? null,
    fetchedAt: response.startedAt,
    contentLength: response.body.length,
    truncated: response.truncated,
    fetchMs: response.endedAt - response.startedAt,
    redirectTo,
    canonicalUrl: canonical,
    linksFound,
    errorCode,
    errorMessage: null,
    etag: response.etag,
    lastModified: response.lastModified,
  };
  const [discovered] = await Promise.all([deps.discovery.add(candidates), deps.records.add(record)]);
  await deps.acks.ack(ticket.partition, ticket.leaseId);
  return { outcome: 'done', summary: { status: response.status, links: candidates.length, queued: discovered.queued } };
}

function redirectCandidate(
  location: string,
  data: FetchJobContext['data'],
  from: Buffer,
  policy: ResolvedPolicy,
): { url: string; inScope: boolean; candidate: Candidate } | { error: string } {
  if (data.x + 1 > policy.policy.maxRedirects) return { error: ErrorCode.TooManyRedirects };
  const normalized = normalizeUrl(location, data.u, policy.normalize);
  if (!normalized.ok) return { error: normalized.code };
  const url = normalized.url;
  return {
    url,
    inScope: inScope(policy.scope, url),
    // A redirect is not a link: same depth, one more hop, same priority band.
    candidate: {
      url,
      hash: fingerprint(url),
      host: hostOf(url),
      depth: data.d,
      hops: data.x + 1,
      flags: UrlFlag.RedirectTarget,
      priority: (data.b + 0.5) / 4,
      from,
    },
  };
}

/** A failed fetch: retry while attempts remain, else record the failure and dead-letter it. */
async function fail(
  deps: PipelineDeps,
  job: FetchJobContext,
  ticket: GateTicket,
  error: unknown,
  release: (leaseUntil?: number) => Promise<void>,
  response: FetchResult | null,
): Promise<JobResult> {
  const { clock, counters } = deps;
  const action = errorAction(error);
  const reason = describeError(error);
  const now = clock.now();
  if (action === 'retry' && job.attempt < job.maxAttempts) {
    const retryAt = isTrawlError(error) ? error.retryAt : undefined;
    const delayMs = retryDelayMs(job.attempt, deps.retry, now, retryAt);
    await release(now + delayMs + deps.leaseMs);
    counters.add('retries');
    deps.logger.debug({ url: job.data.u, attempt: job.attempt, delayMs, reason }, 'fetch failed; will retry');
    return { outcome: 'retry', reason, delayMs };
  }
  await release();
  const code = isTrawlError(error) ? error.code : ErrorCode.FetchNetwork;
  await deps.records.add({
    hash: fingerprint(job.data.u),
    url: job.data.u,
    host: job.data.h,
    depth: job.data.d,
    state: action === 'skip' ? 'skipped' : 'failed',
    httpStatus: response?.status ?? null,
    contentType: response?.contentType ?? null,
    contentHash: null,
    storageKey: null,
    fetchedAt: response?.startedAt ?? now,
    contentLength: response?.body.length ?? null,
    truncated: response?.truncated ?? false,
    fetchMs: response ? response.endedAt - response.startedAt : null,
    redirectTo: null,
    canonicalUrl: null,
    linksFound: null,
    errorCode: code,
    errorMessage: reason.slice(0, 1000),
    etag: null,
    lastModified: null,
  });
  await deps.acks.ack(ticket.partition, ticket.leaseId);
  if (action === 'skip') return { outcome: 'done', summary: { skipped: reason } };
  counters.add('dead');
  deps.logger.warn({ url: job.data.u, attempts: job.attempt, reason, partition: ticket.partition }, 'giving up on URL (dead-lettered)');
  return { outcome: 'dead', reason: `${reason} (after ${job.attempt} attempt${job.attempt === 1 ? '' : 's'})` };
}
