import { type Clock, describeError, ErrorCode, isTrawlError, sleep, TrawlError } from '@trawl/core';
import type { FetchResult, Fetcher } from '@trawl/fetch';
import type { Frontier, GateTicket, HostHealthState } from '@trawl/frontier';
import { type FetchOutcomeKind, hostDelayMs, nextDueAt, nextHealth, parseRetryAfter } from '@trawl/politeness';
import type { FetchJobContext, JobResult } from '@trawl/queue';
import type { RobotsCache } from '@trawl/robots';
import type { ContentStore } from '@trawl/store';
import type { Logger } from '@trawl/telemetry';
import type { Counters } from './counters.js';
import type { Discovery } from './discovery.js';
import { failUrl, skipUrl } from './failure.js';
import type { PolicyFollower, ResolvedPolicy } from './policy.js';
import type { Acks, Records } from './records.js';
import { handleResponse } from './response.js';
import { classifyStatus, type RetryOptions, retryDelayMs } from './retry.js';
import { cachedRobotsVerdict, type RobotsDeps, robotsStep } from './robots-step.js';
import { HTML_TYPES } from './stages.js';

export interface PipelineDeps {
  frontier: Frontier;
  fetcher: Fetcher;
  store: ContentStore;
  robots: RobotsCache;
  discovery: Discovery;
  records: Records;
  acks: Acks;
  policy: PolicyFollower;
  counters: Counters;
  clock: Clock;
  logger: Logger;
  retry: RetryOptions;
  leaseMs: number;
  /** A job whose host is due within this long waits in the worker instead of the delayed set. */
  gateWaitMs: number;
  recordSitemaps?: (origin: string, urls: string[]) => Promise<void>;
}

function robotsDepsOf(deps: PipelineDeps): RobotsDeps {
  return {
    fetcher: deps.fetcher,
    cache: deps.robots,
    counters: deps.counters,
    now: () => deps.clock.now(),
    recordSitemaps: deps.recordSitemaps,
  };
}

/**
 * When to ask the queue to run a deferred job again: a little before the host's due time, since
 * delayed jobs come back up to ~100 ms late; one that comes back early waits at the gate.
 */
function earlyForQueue(deps: PipelineDeps, dueAt: number): number {
  return Math.max(deps.clock.now(), dueAt - deps.gateWaitMs / 2);
}

type Release = (dueAt: number, options?: { health?: HostHealthState; leaseUntil?: number; keepHost?: boolean }) => Promise<void>;

/**
 * One fetch job from start to finish: gate → robots.txt → fetch → release the host (its next
 * due time from the politeness model) → store → parse → discover → record → acknowledge the
 * lease. Returns the decision for the queue; every failure becomes retry / dead / done here.
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
  // robots.txt already known to forbid this URL: settle it without waiting for the host's turn
  // (nothing is requested; the host's claim, if this lease has it, is freed).
  const robotsDeps = robotsDepsOf(deps);
  const forbidden = await cachedRobotsVerdict(robotsDeps, policy, data.u);
  if (forbidden && (forbidden.kind === 'disallow' || forbidden.kind === 'skip-host')) {
    await frontier.release(ticket, 0);
    counters.add('robotsDisallowed');
    return skipUrl(deps, job, ticket.leaseId, forbidden.kind === 'disallow' ? ErrorCode.RobotsDisallowed : ErrorCode.CrawlDelayTooLong, forbidden.reason);
  }

  // Handed out ahead of its host's due time: wait for it here, then ask the gate once.
  if (data.t !== undefined && data.t > clock.now() && data.t - clock.now() <= deps.gateWaitMs) await sleep(data.t - clock.now());
  let gate = await frontier.acquire(ticket);
  // A host due in a moment (the dispatcher hands jobs out a little ahead, so pickup latency is
  // off the politeness clock): wait here rather than through the queue's delayed set, whose
  // timers run up to ~100 ms late. The gate is asked again; it alone decides.
  for (let tries = 0; gate.kind === 'not-due' && gate.at - clock.now() <= deps.gateWaitMs && tries < 3; tries += 1) {
    await sleep(Math.max(0, gate.at - clock.now()));
    gate = await frontier.acquire(ticket);
  }
  if (gate.kind === 'stale') {
    counters.add('stale');
    return { outcome: 'stale' };
  }
  if (gate.kind !== 'ok') {
    counters.add('deferred');
    return { outcome: 'defer', until: earlyForQueue(deps, gate.at) };
  }

  // The host is this job's until released; release exactly once, whatever happens.
  let released = false;
  const release: Release = async (dueAt, options = {}) => {
    if (released) return;
    released = true;
    await frontier.release(ticket, dueAt, options);
  };
  try {
    return await fetchUnderGate(deps, job, ticket.leaseId, policy, gate.health, release);
  } finally {
    if (!released) await release(clock.now() + policy.politeness.minDelayMs).catch(() => undefined);
  }
}

async function fetchUnderGate(
  deps: PipelineDeps,
  job: FetchJobContext,
  leaseId: string,
  policy: ResolvedPolicy,
  health: HostHealthState,
  release: Release,
): Promise<JobResult> {
  const { clock, counters } = deps;
  const { data } = job;
  const delayAfter = (kind: FetchOutcomeKind, crawlDelayMs: number | null, lastResponseMs: number | null) => {
    const next = nextHealth(health, kind, policy.politeness);
    return { health: next, delayMs: hostDelayMs({ crawlDelayMs, health: next, lastResponseMs }, policy.politeness) };
  };

  // A redirected robots.txt is followed inline; each hop waits the host's current delay.
  const hopDelayMs = hostDelayMs({ crawlDelayMs: null, health, lastResponseMs: null }, policy.politeness);
  const robots = await robotsStep(robotsDepsOf(deps), policy, data.u, hopDelayMs, job.signal);
  switch (robots.kind) {
    case 'fetched': {
      // Fetching robots.txt was this turn's request to the host.
      const after = delayAfter(robots.failed ? 'error' : 'success', robots.crawlDelayMs, robots.responseMs);
      const due = clock.now() + after.delayMs;
      if (robots.ssrfBlocked) {
        // Refused before connecting: the address is off limits, now and for the page too.
        counters.add('ssrfBlocked');
        await release(clock.now());
        return skipUrl(deps, job, leaseId, ErrorCode.SsrfBlocked, robots.reason);
      }
      if (robots.failed) {
        // RFC 9309 §2.3.1.4: the host counts as fully disallowed; this URL tries again when
        // robots.txt may be fetched again (an attempt), and is dead-lettered when they run out.
        const error = new TrawlError(ErrorCode.RobotsUnavailable, `robots.txt unavailable: ${robots.reason}`, { action: 'retry', retryAt: robots.retryAt });
        return failUrl(deps, job, leaseId, error, null, (leaseUntil) => release(due, { health: after.health, leaseUntil }));
      }
      // The page waits for the host's next turn, which this job keeps.
      await release(due, { health: after.health, keepHost: true });
      return { outcome: 'defer', until: earlyForQueue(deps, due) };
    }
    case 'disallow':
    case 'skip-host':
      await release(clock.now()); // nothing was requested
      counters.add('robotsDisallowed');
      return skipUrl(deps, job, leaseId, robots.kind === 'disallow' ? ErrorCode.RobotsDisallowed : ErrorCode.CrawlDelayTooLong, robots.reason);
    case 'unavailable': {
      const error = new TrawlError(ErrorCode.RobotsUnavailable, `robots.txt unavailable: ${robots.reason}`, { action: 'retry', retryAt: robots.retryAt });
      return failUrl(deps, job, leaseId, error, null, (leaseUntil) => release(clock.now(), { leaseUntil }));
    }
    case 'allow':
      break;
  }
  const crawlDelayMs = robots.crawlDelayMs;

  let response: FetchResult;
  try {
    response = await deps.fetcher.fetch(data.u, {
      signal: job.signal,
      acceptBody: policy.policy.nonHtml === 'skip' ? (type) => type === null || HTML_TYPES.has(type) : undefined,
    });
  } catch (error) {
    counters.add('fetchErrors');
    if (isTrawlError(error) && (error.code as string) === ErrorCode.SsrfBlocked) {
      // Refused before any byte went out: the host was not contacted.
      counters.add('ssrfBlocked');
      return failUrl(deps, job, leaseId, error, null, (leaseUntil) => release(clock.now(), { leaseUntil }));
    }
    const after = delayAfter('error', crawlDelayMs, null);
    const due = clock.now() + after.delayMs;
    return failUrl(deps, job, leaseId, error, null, (leaseUntil) => release(due, { health: after.health, leaseUntil }));
  }

  const status = classifyStatus(response.status, response.location !== null);
  const responseMs = response.endedAt - response.startedAt;
  counters.add(`status${Math.min(5, Math.floor(response.status / 100))}xx` as 'status2xx');
  if (status === 'retry') {
    const throttled = response.status === 429 || response.status === 503;
    if (throttled) counters.add('throttled');
    const retryAfterAt = throttled ? parseRetryAfter(response.headers['retry-after'], clock.now(), policy.politeness.maxRetryAfterMs) : null;
    const after = delayAfter(throttled ? 'throttled' : 'error', crawlDelayMs, responseMs);
    const due = nextDueAt(response.endedAt, after.delayMs, retryAfterAt);
    const error = new TrawlError(response.status === 429 ? ErrorCode.HttpThrottled : ErrorCode.HttpServerError, `HTTP ${response.status}`, {
      action: 'retry',
      retryAt: retryAfterAt ?? undefined,
    });
    return failUrl(deps, job, leaseId, error, response, (leaseUntil) => release(due, { health: after.health, leaseUntil }));
  }

  const after = delayAfter('success', crawlDelayMs, responseMs);
  // The delay runs from the moment the response ended (the fetcher's clock, which is this
  // process's), not from whenever this line runs: the server finished no later than that.
  await release(response.endedAt + after.delayMs, { health: after.health });
  counters.add('fetched');
  counters.add('bytes', response.rawBytes || response.body.length);
  try {
    return await handleResponse(deps, job, leaseId, policy, response, status);
  } catch (error) {
    // Store or database trouble after a good fetch: try the whole job again later.
    if (job.attempt < job.maxAttempts) {
      counters.add('retries');
      deps.logger.warn({ err: error, url: data.u }, 'processing failed after fetch; retrying');
      return { outcome: 'retry', reason: describeError(error), delayMs: retryDelayMs(job.attempt, deps.retry, clock.now()) };
    }
    throw error;
  }
}
