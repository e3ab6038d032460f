import { ErrorCode } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import { UrlFlag } from '@trawl/frontier';
import type { FetchJobContext } from '@trawl/queue';
import { fingerprint, hostOf, inScope, normalizeUrl, variantKey, trapReason } from '@trawl/url';
import { keepContent } from './content.js';
import { type Candidate, linkSkipReason } from './discovery.js';
import type { JobOutcome } from './outcome.js';
import type { ResolvedPolicy } from './policy.js';
import type { PipelineDeps } from './process.js';
import type { FetchRecord } from './records.js';
import type { StatusClass } from './retry.js';

/**
 * After a fetch that produced a usable response (the host is already released): keep a 200's
 * content (parse, classify duplicates, store body and text, archive — see `keepContent`), archive
 * a 304, and find a redirect's target. Returns the outcome: the page's record, the URLs to
 * discover, and an ack.
 */
export async function handleResponse(
  deps: PipelineDeps,
  job: FetchJobContext,
  policy: ResolvedPolicy,
  response: FetchResult,
  status: StatusClass,
): Promise<JobOutcome> {
  const { data } = job;
  const hash = fingerprint(data.u);
  const record: FetchRecord = {
    hash,
    url: data.u,
    host: data.h,
    depth: data.d,
    state: 'done',
    httpStatus: response.status,
    contentType: response.contentType,
    contentHash: null,
    storageKey: null,
    fetchedAt: response.startedAt,
    contentLength: response.body.length,
    truncated: response.truncated,
    fetchMs: response.endedAt - response.startedAt,
    redirectTo: null,
    canonicalUrl: null,
    linksFound: null,
    errorCode: null,
    errorMessage: null,
    etag: response.etag,
    lastModified: response.lastModified,
    charset: null,
    noindex: false,
    nofollow: false,
    bodySkipped: response.bodySkipped,
  };
  let candidates: Candidate[] = [];

  if (status === 'ok') {
    candidates = await keepContent(deps, job, policy, response, record);
  } else if (status === 'not-modified') {
    // Unchanged since the stored copy: nothing is stored, the page keeps its body reference.
    deps.counters.add('notModified');
    await deps.archive?.notModified(response, hash);
  } else if (status === 'redirect' && response.location) {
    deps.counters.add('redirects');
    const target = redirectTarget(response.location, job, hash, policy, deps.clock.now());
    if ('error' in target) {
      record.errorCode = target.error;
      deps.counters.add(target.error === ErrorCode.TooManyRedirects ? 'tooManyRedirects' : 'invalidUrls');
    } else {
      record.redirectTo = target.candidate.url;
      if (target.inScope) candidates = [target.candidate];
      else deps.counters.add('outOfScope');
    }
  }

  return { record, discover: candidates, ack: true, result: { outcome: 'done', summary: { status: response.status, links: candidates.length } } };
}

/**
 * A redirect is not followed inline: its target is queued like a link (same depth, one more hop),
 * so it passes politeness, robots.txt, the SSRF guard and the seen-set — which also ends loops.
 */
function redirectTarget(
  location: string,
  job: FetchJobContext,
  from: Buffer,
  policy: ResolvedPolicy,
  now: number,
): { inScope: boolean; candidate: Candidate } | { error: string } {
  const { data } = job;
  if (data.x + 1 > policy.policy.maxRedirects) return { error: ErrorCode.TooManyRedirects };
  const normalized = normalizeUrl(location, data.u, policy.normalize);
  if (!normalized.ok) return { error: normalized.code };
  const url = normalized.url;
  if (policy.traps && trapReason(url, policy.traps, now)) return { error: ErrorCode.Trap };
  return {
    inScope: inScope(policy.scope, url),
    candidate: {
      url,
      hash: fingerprint(url),
      host: hostOf(url),
      depth: data.d,
      maxDepth: data.m ?? null,
      hops: data.x + 1,
      flags: UrlFlag.RedirectTarget,
      priority: (data.b + 0.5) / 4,
      from,
      variantKey: variantKey(url),
      ...(normalized.spelled === undefined ? {} : { spelled: normalized.spelled }),
      // A redirect to a file the crawl would drop (a PDF, an image) is recorded, not fetched.
      skipReason: linkSkipReason(url, policy) ?? undefined,
    },
  };
}
