import { ErrorCode, type StatusClass } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import { UrlFlag } from '@trawl/frontier';
import { type Candidate, linkSkipReason, type ResolvedPolicy } from '@trawl/model';
import { fingerprint, hostOf, inScope, normalizeUrl, trapReason, variantKey } from '@trawl/url';
import type { PageRef } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import type { JobOutcome } from '../outcome.js';
import { type ContentFields, recordOf } from '../record.js';
import { keepContent } from './content.js';
import type { StoredBody } from './store-body.js';

/** A response as the process stage takes it: its status class, and its body as the fetch stage stored it. */
export interface ProcessedResponse {
  response: FetchResult;
  status: Exclude<StatusClass, 'retry'>;
  /** The body's storage key and hash, when the fetch stage stored it already (it is not stored again). */
  stored?: StoredBody | null;
  /**
   * Whether the fetch stage rendered the page (`dom`: its rendered DOM, which the page's links and
   * text come from; `domKey`: where the fetch stage stored it, recorded for the WARC export).
   */
  render?: { rendered: boolean; reason: string; dom: Buffer | null; domKey?: string | null };
}

/**
 * The process stage, after a fetch that produced a usable response (the host is already
 * released): keep a 200's content (parse, classify duplicates, store body and text, archive —
 * see `keepContent`), archive a 304, and find a redirect's target. Returns the outcome: the
 * page's record, the URLs to discover, and an ack.
 */
export async function processFetched(
  deps: Pick<PipelineDeps, 'store' | 'storeText' | 'duplicates' | 'archive' | 'counters' | 'clock' | 'analyzer'>,
  attempt: PageRef,
  policy: ResolvedPolicy,
  fetched: ProcessedResponse,
  /** For a page whose host waits on its links: see `keepContent`. */
  discoverNow?: (candidates: Candidate[]) => Promise<unknown>,
): Promise<JobOutcome> {
  const { response, status } = fetched;
  let content: ContentFields = {};
  let discover: Candidate[] = [];
  let redirectTo: string | null = null;
  let errorCode: string | null = null;

  if (status === 'ok') {
    ({ content, discover } = await keepContent(deps, attempt, policy, response, fetched.stored, fetched.render?.dom ?? null, fetched.render?.domKey ?? null, discoverNow));
  } else if (status === 'not-modified') {
    // Unchanged since the stored copy: nothing is stored, the page keeps its body reference.
    deps.counters.add('notModified');
    await deps.archive?.notModified(response, attempt.hash);
  } else if (status === 'redirect' && response.location) {
    deps.counters.add('redirects');
    const target = redirectTarget(response.location, attempt, policy, deps.clock.now());
    if ('error' in target) {
      errorCode = target.error;
      deps.counters.add(target.error === ErrorCode.TooManyRedirects ? 'tooManyRedirects' : 'invalidUrls');
    } else {
      redirectTo = target.candidate.url;
      if (target.inScope) discover = [target.candidate];
      else deps.counters.add('outOfScope');
    }
  }

  if (fetched.render) content = { ...content, render: { rendered: fetched.render.rendered, reason: fetched.render.reason, domKey: fetched.render.domKey ?? null } };
  const record = recordOf(attempt, { state: 'done', at: response.startedAt, redirectTo, errorCode }, response, content);
  return { record, discover, ack: true, result: { outcome: 'done', summary: { status: response.status, links: discover.length } } };
}

/**
 * A redirect is not followed inline: its target is queued like a link (same depth, one more hop),
 * so it passes politeness, robots.txt, the SSRF guard and the seen-set — which also ends loops.
 */
function redirectTarget(location: string, attempt: PageRef, policy: ResolvedPolicy, now: number): { inScope: boolean; candidate: Candidate } | { error: string } {
  const { job } = attempt;
  if (job.hops + 1 > policy.policy.maxRedirects) return { error: ErrorCode.TooManyRedirects };
  const normalized = normalizeUrl(location, job.url, policy.normalize);
  if (!normalized.ok) return { error: normalized.code };
  const url = normalized.url;
  if (policy.traps && trapReason(url, policy.traps, now)) return { error: ErrorCode.Trap };
  return {
    inScope: inScope(policy.scope, url),
    candidate: {
      url,
      hash: fingerprint(url),
      host: hostOf(url),
      depth: job.depth,
      maxDepth: job.maxDepth,
      hops: job.hops + 1,
      flags: UrlFlag.RedirectTarget,
      // Queued in its source's band (whatever TRAWL_PRIORITY_BANDS is): the redirect is the same page.
      priority: 0.5,
      band: job.band,
      from: attempt.hash,
      variantKey: variantKey(url),
      ...(normalized.spelled === undefined ? {} : { spelled: normalized.spelled }),
      // A redirect to a file the crawl would drop (a PDF, an image) is recorded, not fetched.
      skipReason: linkSkipReason(url, policy) ?? undefined,
    },
  };
}
