import { classifyStatus, ErrorCode, isTrawlError, type StatusClass, TrawlError } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import { type HostHealthState, UrlFlag } from '@trawl/frontier';
import type { ResolvedPolicy } from '@trawl/model';
import {
  blockSignalOfFailure,
  blockSignalOfResponse,
  type FetchOutcomeKind,
  hostDelayMs,
  nextDueAt,
  nextHealth,
  outcomeOfError,
  outcomeOfStatus,
  parseRetryAfter,
  responseTimeMs,
} from '@trawl/politeness';
import type { Attempt } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import { failOutcome } from '../failure.js';
import type { HostRelease, JobOutcome } from '../outcome.js';
import { HTML_TYPES } from '../process/store-body.js';
import { judgeAnswer, type Judgement, withBlocks } from './block-step.js';
import type { RenderedPage } from './render-step.js';
import { robotsDepsOf, robotsStep } from './robots-step.js';
import { defer, earlyForQueue } from './when.js';

/** A response the process stage keeps (the host's release decided, not yet carried out). */
export interface Fetched {
  response: FetchResult;
  status: Exclude<StatusClass, 'retry'>;
  release: HostRelease;
  /** Whether the page was rendered (absent: rendering is off, or the response is not a page to render). */
  render?: RenderedPage;
}

/**
 * robots.txt and the fetch itself, under the host's token. Returns the response to keep, or the
 * outcome of a turn that ended here (robots.txt fetched, refused, a failed fetch, a status to
 * retry), each with the host's next due time from the politeness model.
 */
export async function fetchUnderGate(deps: PipelineDeps, attempt: Attempt, policy: ResolvedPolicy, health: HostHealthState): Promise<Fetched | JobOutcome> {
  const { clock, counters } = deps;
  const { job } = attempt;
  const delayAfter = (kind: FetchOutcomeKind, crawlDelayMs: number | null, lastResponseMs: number | null, judgement?: Judgement) => {
    const next = nextHealth(health, kind, policy.politeness);
    return { health: judgement === undefined ? next : withBlocks(next, judgement), delayMs: hostDelayMs({ crawlDelayMs, health: next, lastResponseMs }, policy.politeness) };
  };
  // Proxy tiers the host has been moved up after refusing the crawler: every request goes that way.
  const tierLevel = health.level ?? 0;

  // A redirected robots.txt is followed inline; each hop waits the host's current delay.
  const hopDelayMs = hostDelayMs({ crawlDelayMs: null, health, lastResponseMs: null }, policy.politeness);
  const robots = await robotsStep(robotsDepsOf(deps), policy, job.url, hopDelayMs, attempt.signal, tierLevel);
  switch (robots.kind) {
    case 'fetched': {
      // Fetching robots.txt was this turn's request to the host. A host judged blocked by it
      // (moved up a tier, or paused) is dealt with on the page's turn, which this job keeps.
      const judgement = robots.ssrfBlocked || robots.proxyUnavailable ? undefined : await judgeAnswer(deps, job.host, health, robots.refusal);
      const after = delayAfter(robots.failed ? 'error' : 'success', robots.crawlDelayMs, robots.responseMs, judgement);
      const dueAt = clock.now() + after.delayMs;
      if (robots.ssrfBlocked) {
        // Refused before connecting: the address is off limits, now and for the page too.
        counters.add('ssrfBlocked');
        return failOutcome(deps, attempt, new TrawlError(ErrorCode.SsrfBlocked, robots.reason, { action: 'skip' }), null, { dueAt: clock.now() });
      }
      if (robots.proxyUnavailable) {
        // No proxy of the host's tier could carry the request: the host heard nothing, its health stands.
        return failOutcome(deps, attempt, new TrawlError(ErrorCode.ProxyUnavailable, robots.reason, { action: 'retry', retryAt: robots.retryAt }), null, { dueAt: clock.now() });
      }
      if (robots.failed) {
        // RFC 9309 §2.3.1.4: the host counts as fully disallowed; this URL tries again when
        // robots.txt may be fetched again (an attempt), and is dead-lettered when they run out.
        return failOutcome(deps, attempt, robotsUnavailable(robots.reason, robots.retryAt), null, { dueAt, health: after.health });
      }
      // The page waits for the host's next turn, which this job keeps.
      return { ...defer(earlyForQueue(deps, dueAt)), release: { dueAt, health: after.health, keepHost: true } };
    }
    case 'refused':
      counters.add('robotsDisallowed');
      return failOutcome(deps, attempt, new TrawlError(robots.refusal.code, robots.refusal.reason, { action: 'skip' }), null, { dueAt: clock.now() });
    case 'unavailable':
      return failOutcome(deps, attempt, robotsUnavailable(robots.reason, robots.retryAt), null, { dueAt: clock.now() });
    case 'allow':
      break;
  }
  const crawlDelayMs = robots.crawlDelayMs;

  // A re-crawl asks whether the page changed since the stored copy (a 304 stores nothing new).
  const conditional = job.flags & UrlFlag.Recrawl && deps.validators ? await deps.validators.headers(attempt.hash) : undefined;
  let response: FetchResult;
  const startedAt = clock.now();
  try {
    response = await deps.fetcher.fetch(job.url, {
      headers: conditional,
      signal: attempt.signal,
      ...(tierLevel > 0 ? { tierLevel } : {}),
      // A sitemap is XML (or gzip); a page's body is read only if it can be kept.
      acceptBody: policy.policy.nonHtml === 'skip' && (job.flags & UrlFlag.Sitemap) === 0 ? (type) => type === null || HTML_TYPES.has(type) : undefined,
    });
  } catch (error) {
    counters.add('fetchErrors');
    if (isTrawlError(error) && (error.code as string) === ErrorCode.SsrfBlocked) {
      // Refused before any byte went out: the host was not contacted.
      counters.add('ssrfBlocked');
      return failOutcome(deps, attempt, error, null, { dueAt: clock.now() });
    }
    if (isTrawlError(error) && error.code === ErrorCode.ProxyUnavailable) {
      // Every proxy of the host's tier is out: the host was not contacted, its health is not in question.
      return failOutcome(deps, attempt, error, null, { dueAt: clock.now() });
    }
    // Whether the failure says something about the host (refused, reset, DNS) or only this URL
    // (its own timeout): only host-wide signals slow the host.
    const refusal = deps.blocking && isTrawlError(error) ? blockSignalOfFailure(error.details?.errno, clock.now() - startedAt) : null;
    const judgement = await judgeAnswer(deps, job.host, health, refusal);
    const after = delayAfter(outcomeOfError(error), crawlDelayMs, null, judgement);
    const release = { dueAt: clock.now() + after.delayMs, health: after.health };
    if (judgement.verdict !== 'fine') return blockedTurn(deps, release);
    return failOutcome(deps, attempt, error, null, release);
  }

  const status = classifyStatus(response.status, response.location !== null);
  // Time to the response headers: a slow body (a tarpit, a huge page) is not the server being slow.
  const responseMs = responseTimeMs(response);
  counters.add(`status${Math.min(5, Math.floor(response.status / 100))}xx` as 'status2xx');
  const refusal = deps.blocking
    ? blockSignalOfResponse({ status: response.status, retryAfter: firstOf(response.headers['retry-after']), location: response.location, body: response.body }, deps.blocking.options)
    : null;
  const judgement = await judgeAnswer(deps, job.host, health, refusal);
  if (refusal !== null && (judgement.verdict !== 'fine' || judgement.canEscalate || refusal.kind !== 'status')) {
    // A refusal is not the page: it is tried again, through the next tier once the host is judged
    // blocked. Without a tier to move to, a plain 403 is the site's answer and a bare 429 its
    // throttling (handled below); a challenge page is never the page.
    const after = delayAfter(outcomeOfStatus(response.status), crawlDelayMs, responseMs, judgement);
    const release = { dueAt: nextDueAt(response.endedAt, after.delayMs, null), health: after.health };
    if (judgement.verdict !== 'fine') return blockedTurn(deps, release);
    const error = new TrawlError(ErrorCode.HttpBlocked, `refused: ${refusal.detail}`, { action: 'retry' });
    return failOutcome(deps, attempt, error, response, release);
  }
  if (status === 'retry') {
    const throttled = response.status === 429 || response.status === 503;
    if (throttled) counters.add('throttled');
    const retryAfterAt = throttled ? parseRetryAfter(response.headers['retry-after'], clock.now(), policy.politeness.maxRetryAfterMs) : null;
    const after = delayAfter(outcomeOfStatus(response.status), crawlDelayMs, responseMs, judgement);
    const error = new TrawlError(response.status === 429 ? ErrorCode.HttpThrottled : ErrorCode.HttpServerError, `HTTP ${response.status}`, {
      action: 'retry',
      retryAt: retryAfterAt ?? undefined,
    });
    return failOutcome(deps, attempt, error, response, { dueAt: nextDueAt(response.endedAt, after.delayMs, retryAfterAt), health: after.health });
  }

  const after = delayAfter('success', crawlDelayMs, responseMs, judgement);
  // The delay runs from the moment the response ended (the fetcher's clock, which is this
  // process's), not from whenever this line runs: the server finished no later than that.
  return { response, status, release: { dueAt: response.endedAt + after.delayMs, health: after.health } };
}

/**
 * The host was just judged blocked (moved up a tier, or paused): this URL is no failure of its
 * own, so it costs none of its tries. The job keeps the host and runs again at its due time,
 * through the new tier (or finds the host paused at the gate, which returns the URL to the frontier).
 */
function blockedTurn(deps: Pick<PipelineDeps, 'clock' | 'gateWaitMs'>, release: HostRelease): JobOutcome {
  return { ...defer(earlyForQueue(deps, release.dueAt)), release: { ...release, keepHost: true } };
}

const firstOf = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

const robotsUnavailable = (reason: string, retryAt: number) =>
  new TrawlError(ErrorCode.RobotsUnavailable, `robots.txt unavailable: ${reason}`, { action: 'retry', retryAt });

export const isFetched = (value: Fetched | JobOutcome): value is Fetched => 'response' in value;
