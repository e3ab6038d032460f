import { type Clock, describeError, ErrorCode, isTrawlError, sleep, TrawlError } from '@trawl/core';
import type { FetchResult, Fetcher } from '@trawl/fetch';
import { type Frontier, type GateTicket, type HostHealthState, UrlFlag } from '@trawl/frontier';
import {
  type FetchOutcomeKind,
  hostDelayMs,
  nextDueAt,
  nextHealth,
  outcomeOfError,
  outcomeOfStatus,
  parseRetryAfter,
  responseTimeMs,
  type RetryPolicy,
  urlRetryDelayMs,
} from '@trawl/politeness';
import type { FetchJobContext, JobResult } from '@trawl/queue';
import type { RobotsCache } from '@trawl/robots';
import type { ContentStore } from '@trawl/store';
import { fingerprint, inScope } from '@trawl/url';
import type { Logger } from '@trawl/telemetry';
import type { PageAnalyzer } from './analyzer.js';
import type { CrawlArchive } from './archive.js';
import type { Counters } from './counters.js';
import type { Discovery } from './discovery.js';
import type { Duplicates } from './duplicates.js';
import { failOutcome, skipOutcome } from './failure.js';
import { applyOutcome, HostHold, type HostRelease, type JobOutcome, renewEveryMs } from './outcome.js';
import type { PolicyFollower, ResolvedPolicy } from './policy.js';
import type { Acks, Records, UrlStates, Validators } from './records.js';
import { handleResponse } from './response.js';
import { classifyStatus } from './retry.js';
import { cachedRobotsVerdict, type RobotsDeps, robotsStep } from './robots-step.js';
import { handleSitemap, type SitemapDeps, sitemapFailure } from './sitemap-step.js';
import { HTML_TYPES } from './stages.js';

export interface PipelineDeps {
  frontier: Pick<Frontier, 'acquire' | 'release' | 'extendLease' | 'clearFetched'>;
  fetcher: Pick<Fetcher, 'fetch' | 'fetchRobots'>;
  store: ContentStore;
  robots: Pick<RobotsCache, 'get' | 'set'>;
  discovery: Pick<Discovery, 'add'>;
  records: Pick<Records, 'add'>;
  acks: Pick<Acks, 'ack'>;
  policy: Pick<PolicyFollower, 'get' | 'refresh'>;
  counters: Pick<Counters, 'add'>;
  clock: Clock;
  logger: Logger;
  /** A URL's own retry schedule (tries, fewer after timeouts, delays). */
  retry: RetryPolicy;
  leaseMs: number;
  /**
   * How often a working job renews its lease and, once it has fetched its page, says it is alive
   * (default a third of the lease). A job handed over while its first attempt still records waits
   * for three missed renewals before fetching again: keep this well under the BullMQ lock
   * (TRAWL_STALLED_MS) so a dead attempt's pages come back about as fast as its jobs.
   */
  renewEveryMs?: number;
  /** A job whose host is due within this long waits in the worker instead of the delayed set. */
  gateWaitMs: number;
  recordSitemaps?: (origin: string, urls: string[]) => Promise<void>;
  /** The stored validators of a re-crawled page, for its conditional GET. */
  validators?: Pick<Validators, 'headers'>;
  /** Where sitemap jobs report (absent: sitemaps are off). */
  sitemaps?: SitemapDeps;
  /** Where HTML pages are decoded, parsed and fingerprinted (absent: on the calling thread). */
  analyzer?: PageAnalyzer;
  /** Duplicate detection (absent: every body counts as new). */
  duplicates?: Pick<Duplicates, 'classify'>;
  /** WARC records written while crawling (TRAWL_WARC_WRITE; absent: none). */
  archive?: Pick<CrawlArchive, 'page' | 'notModified'>;
  /**
   * Whether a URL is recorded already, for jobs that may repeat finished work (absent: never
   * asked, every job fetches).
   */
  urlStates?: Pick<UrlStates, 'state'>;
}

function robotsDepsOf(deps: PipelineDeps): RobotsDeps {
  return {
    fetcher: deps.fetcher,
    cache: deps.robots,
    counters: deps.counters,
    now: () => deps.clock.now(),
    logger: deps.logger,
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

const defer = (until: number): JobOutcome => ({ ack: false, result: { outcome: 'defer', until } });

/**
 * One fetch job from start to finish: gate → robots.txt → fetch → release the host (its next
 * due time from the politeness model) → store → parse → discover → record → acknowledge the
 * lease. Every exit path produces one `JobOutcome`; `applyOutcome` carries it out, so the order
 * of release, record and ack lives in one place.
 */
export async function processFetchJob(deps: PipelineDeps, job: FetchJobContext): Promise<JobResult> {
  const { data } = job;
  let policy = await deps.policy.get();
  // A URL this copy of the policy calls out of scope was in scope when it was queued: seeds
  // widened the scope since. Read the policy again, or the page's links would be dropped.
  if (policy && !inScope(policy.scope, data.u)) policy = await deps.policy.refresh();
  if (!policy) return defer(deps.clock.now() + 1000).result;

  const ticket: GateTicket = {
    partition: data.p,
    host: data.h,
    leaseId: data.l ?? `job-${job.id}`,
    token: job.token,
    band: data.b,
    entry: { url: data.u, depth: data.d, maxDepth: data.m ?? null, hops: data.x, flags: data.f },
  };
  const hold = new HostHold(deps, ticket);
  const lease = keepLease(deps, hold);
  let finished = false;
  try {
    const outcome = await decide(deps, job, hold, policy);
    const result = await applyOutcome(deps, hold, outcome);
    finished = result.outcome === 'done' || result.outcome === 'dead';
    return result;
  } finally {
    // This attempt fetched the page but will not record it (it is retried, or an error or a
    // fatal fault stops it): its next attempt may fetch at once.
    if (hold.fetched && !finished) await deps.frontier.clearFetched(ticket.partition, ticket.leaseId).catch(() => undefined);
    lease.stop();
    // An exception escaped (the queue will retry the job): never leave the host held.
    if (hold.holding) await hold.release({ dueAt: deps.clock.now() + policy.politeness.minDelayMs }).catch(() => undefined);
  }
}

/**
 * Renews the job's lease every third of TRAWL_LEASE_MS for as long as the job runs, so slow work
 * (a slow content store, PostgreSQL restarting while the record waits) never lets the lease expire
 * and the URL be handed to another worker while this one still works on it. Extending never
 * revives a lease that is gone (a stale job's) and never shortens one (the gate's, a retry's).
 */
function keepLease(deps: PipelineDeps, hold: HostHold): { stop(): void } {
  const { ticket } = hold;
  let wasLive = false;
  let lost = false;
  const renew = () => {
    const heartbeat = hold.fetched ? { token: ticket.token, aliveUntil: hold.aliveUntil() } : undefined;
    deps.frontier.extendLease(ticket.partition, ticket.leaseId, deps.clock.now() + deps.leaseMs, heartbeat).then(
      (live) => {
        if (live) wasLive = true;
        else if (wasLive && !lost) {
          lost = true;
          deps.counters.add('leasesLost');
          deps.logger.warn({ leaseId: ticket.leaseId, host: ticket.host }, 'lease expired while its job was still working: its URL is back in the frontier');
        }
      },
      (error: unknown) => deps.logger.warn({ err: error, leaseId: ticket.leaseId }, 'could not renew a lease'),
    );
  };
  const timer = setInterval(renew, renewEveryMs(deps));
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * A job that may repeat finished work — redelivered after its worker died, or carrying a URL that
 * came back from an unacknowledged lease or a rebuild (UrlFlag.Verify) — asks PostgreSQL (first,
 * and a Verify job again once it holds the host):
 * a URL recorded since it was queued (queueing sets `urls.state` to new/queued; a record sets
 * done/skipped) was fetched by the earlier attempt, which died after its record and before its
 * ack. Its lease is acknowledged now and nothing is fetched. Null: fetch as usual.
 */
async function alreadyRecorded(deps: PipelineDeps, job: FetchJobContext): Promise<JobOutcome | null> {
  if (!deps.urlStates || ((job.data.f & UrlFlag.Verify) === 0 && !job.redelivered)) return null;
  const state = await deps.urlStates.state(fingerprint(job.data.u));
  if (state !== 'done' && state !== 'skipped') return null;
  deps.counters.add('alreadyRecorded');
  // Never fetched here: hand back the host claim dispatch gave the lease, if it holds it.
  return { release: { dueAt: 0, claimOnly: true }, ack: true, result: { outcome: 'done', summary: { alreadyRecorded: state } } };
}

/** Everything up to the outcome: gate, robots.txt, fetch, and what the response means. */
async function decide(deps: PipelineDeps, job: FetchJobContext, hold: HostHold, policy: ResolvedPolicy): Promise<JobOutcome> {
  const { counters } = deps;
  const { data } = job;
  const repeated = await alreadyRecorded(deps, job);
  if (repeated) return repeated;
  // robots.txt already known to forbid this URL: settle it without waiting for the host's turn
  // (nothing is requested; the host's claim, if this lease has it, is handed back).
  const forbidden = await cachedRobotsVerdict(robotsDepsOf(deps), policy, data.u);
  if (forbidden && (forbidden.kind === 'disallow' || forbidden.kind === 'skip-host')) {
    counters.add('robotsDisallowed');
    const code = forbidden.kind === 'disallow' ? ErrorCode.RobotsDisallowed : ErrorCode.CrawlDelayTooLong;
    return skipOutcome(deps, job, code, forbidden.reason, { dueAt: 0, claimOnly: true });
  }

  const gate = await passGate(deps, job, hold);
  if (gate.kind === 'stale') {
    counters.add('stale');
    return { ack: false, result: { outcome: 'stale' } };
  }
  // Operator pause: the gate already returned the URL to the frontier; this job is done with.
  if (gate.kind === 'paused') {
    counters.add('pausedReturned');
    return { ack: false, result: { outcome: 'stale' } };
  }
  if (gate.kind !== 'ok') {
    counters.add('deferred');
    return defer(earlyForQueue(deps, gate.at));
  }
  hold.acquired();
  // A copy of this URL under another lease (a rebuild's beside one pushed after the loss) may
  // have been recorded while this job waited for the host: the gate held it back while that copy
  // was being recorded, so asking again now, with the host held, is the answer that counts.
  if ((data.f & UrlFlag.Verify) !== 0) {
    const recorded = await alreadyRecorded(deps, job);
    if (recorded) return recorded;
  }

  const sitemap = (job.data.f & UrlFlag.Sitemap) !== 0;
  const fetched = await fetchUnderGate(deps, job, policy, gate.health);
  if (fetched.kind === 'outcome') return sitemap ? sitemapFailure(deps, job, fetched.outcome) : fetched.outcome;
  // The host is free for its next URL before this one is stored and parsed; the lease runs a full
  // TRAWL_LEASE_MS from here (and is renewed while the job works).
  await hold.release({ ...fetched.release, fetched: true }, deps.clock.now() + deps.leaseMs);
  counters.add('fetched');
  counters.add('bytes', fetched.response.rawBytes || fetched.response.body.length);
  try {
    if (sitemap) return await handleSitemap(deps, job, policy, fetched.response);
    return await handleResponse(deps, job, policy, fetched.response, fetched.status);
  } catch (error) {
    return processingFailed(deps, job, error);
  }
}

/** Store or database trouble after a good fetch. */
function processingFailed(deps: PipelineDeps, job: FetchJobContext, error: unknown): JobOutcome {
  if (isTrawlError(error) && error.action === 'fatal') throw error;
  deps.logger.warn({ err: error, url: job.data.u, attempt: job.attempt }, 'processing failed after fetch');
  if (job.attempt < job.maxAttempts) {
    deps.counters.add('retries');
    const delayMs = urlRetryDelayMs(job.attempt, deps.retry, deps.clock.now());
    return { leaseUntil: deps.clock.now() + delayMs + deps.leaseMs, ack: false, result: { outcome: 'retry', reason: describeError(error), delayMs } };
  }
  return failOutcome(deps, job, new TrawlError(ErrorCode.Store, describeError(error), { action: 'fail', cause: error }), null);
}

type Gate = Awaited<ReturnType<PipelineDeps['frontier']['acquire']>>;

/**
 * How long before a host's due time the gate is asked for it, as of that time: about a round trip
 * to Redis on a busy event loop, which then overlaps the last moments of the wait instead of
 * following it. The request itself still never starts before the due time (`acquireAt`).
 */
export const GATE_ASK_AHEAD_MS = 4;

/**
 * The host gate. A job handed out ahead of its host's due time (the dispatcher's lead) waits here
 * rather than in the queue's delayed set, whose timers run up to ~100 ms late; the gate is asked
 * again and alone decides.
 */
async function passGate(deps: PipelineDeps, job: FetchJobContext, hold: HostHold): Promise<Gate> {
  const { clock } = deps;
  const untilDue = (at: number) => at - clock.now();
  const due = job.data.t;
  if (due !== undefined && untilDue(due) > GATE_ASK_AHEAD_MS && untilDue(due) <= deps.gateWaitMs) await sleep(untilDue(due) - GATE_ASK_AHEAD_MS);
  let gate = await acquireAt(deps, hold, due);
  for (let tries = 0; gate.kind === 'not-due' && untilDue(gate.at) <= deps.gateWaitMs && tries < 3; tries += 1) {
    await sleep(Math.max(0, untilDue(gate.at) - GATE_ASK_AHEAD_MS));
    gate = await acquireAt(deps, hold, gate.at);
  }
  return gate;
}

/**
 * Asks the gate for the host as of `due` when that is at most GATE_ASK_AHEAD_MS away (else as of
 * now), and once it says yes waits out whatever is left: the fetch starts at the due time, not a
 * round trip after it, and never before it. The clock counts whole milliseconds (a response that
 * ended at 1000.9 was stamped 1000, its host due at 1000 + delay), so the wait lasts until the
 * due millisecond has passed: the request then starts at least the delay after the response's
 * real end, as it did when the gate's round trip came after the wait.
 */
async function acquireAt(deps: PipelineDeps, hold: HostHold, due: number | undefined): Promise<Gate> {
  const { clock } = deps;
  const ahead = due !== undefined && due > clock.now() && due - clock.now() <= GATE_ASK_AHEAD_MS;
  const gate = await deps.frontier.acquire(hold.ticket, ahead ? { at: due } : {});
  if (ahead && gate.kind === 'ok') while (clock.now() <= due) await sleep(due + 1 - clock.now());
  return gate;
}

type Fetched =
  | { kind: 'outcome'; outcome: JobOutcome }
  | { kind: 'response'; response: FetchResult; status: 'ok' | 'not-modified' | 'redirect' | 'permanent'; release: HostRelease };

/** robots.txt and the fetch itself, under the host's token. */
async function fetchUnderGate(deps: PipelineDeps, job: FetchJobContext, policy: ResolvedPolicy, health: HostHealthState): Promise<Fetched> {
  const { clock, counters } = deps;
  const { data } = job;
  const outcome = (o: JobOutcome): Fetched => ({ kind: 'outcome', outcome: o });
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
      const dueAt = clock.now() + after.delayMs;
      if (robots.ssrfBlocked) {
        // Refused before connecting: the address is off limits, now and for the page too.
        counters.add('ssrfBlocked');
        return outcome(skipOutcome(deps, job, ErrorCode.SsrfBlocked, robots.reason, { dueAt: clock.now() }));
      }
      if (robots.failed) {
        // RFC 9309 §2.3.1.4: the host counts as fully disallowed; this URL tries again when
        // robots.txt may be fetched again (an attempt), and is dead-lettered when they run out.
        const error = new TrawlError(ErrorCode.RobotsUnavailable, `robots.txt unavailable: ${robots.reason}`, { action: 'retry', retryAt: robots.retryAt });
        return outcome(failOutcome(deps, job, error, null, { dueAt, health: after.health }));
      }
      // The page waits for the host's next turn, which this job keeps.
      return outcome({ ...defer(earlyForQueue(deps, dueAt)), release: { dueAt, health: after.health, keepHost: true } });
    }
    case 'disallow':
    case 'skip-host':
      counters.add('robotsDisallowed');
      return outcome(
        skipOutcome(deps, job, robots.kind === 'disallow' ? ErrorCode.RobotsDisallowed : ErrorCode.CrawlDelayTooLong, robots.reason, { dueAt: clock.now() }),
      );
    case 'unavailable': {
      const error = new TrawlError(ErrorCode.RobotsUnavailable, `robots.txt unavailable: ${robots.reason}`, { action: 'retry', retryAt: robots.retryAt });
      return outcome(failOutcome(deps, job, error, null, { dueAt: clock.now() }));
    }
    case 'allow':
      break;
  }
  const crawlDelayMs = robots.crawlDelayMs;

  // A re-crawl asks whether the page changed since the stored copy (a 304 stores nothing new).
  const conditional = data.f & UrlFlag.Recrawl && deps.validators ? await deps.validators.headers(fingerprint(data.u)) : undefined;
  let response: FetchResult;
  try {
    response = await deps.fetcher.fetch(data.u, {
      headers: conditional,
      signal: job.signal,
      // A sitemap is XML (or gzip); a page's body is read only if it can be kept.
      acceptBody: policy.policy.nonHtml === 'skip' && (data.f & UrlFlag.Sitemap) === 0 ? (type) => type === null || HTML_TYPES.has(type) : undefined,
    });
  } catch (error) {
    counters.add('fetchErrors');
    if (isTrawlError(error) && (error.code as string) === ErrorCode.SsrfBlocked) {
      // Refused before any byte went out: the host was not contacted.
      counters.add('ssrfBlocked');
      return outcome(failOutcome(deps, job, error, null, { dueAt: clock.now() }));
    }
    // Whether the failure says something about the host (refused, reset, DNS) or only this URL
    // (its own timeout): only host-wide signals slow the host.
    const after = delayAfter(outcomeOfError(error), crawlDelayMs, null);
    return outcome(failOutcome(deps, job, error, null, { dueAt: clock.now() + after.delayMs, health: after.health }));
  }

  const status = classifyStatus(response.status, response.location !== null);
  // Time to the response headers: a slow body (a tarpit, a huge page) is not the server being slow.
  const responseMs = responseTimeMs(response);
  counters.add(`status${Math.min(5, Math.floor(response.status / 100))}xx` as 'status2xx');
  if (status === 'retry') {
    const throttled = response.status === 429 || response.status === 503;
    if (throttled) counters.add('throttled');
    const retryAfterAt = throttled ? parseRetryAfter(response.headers['retry-after'], clock.now(), policy.politeness.maxRetryAfterMs) : null;
    const after = delayAfter(outcomeOfStatus(response.status), crawlDelayMs, responseMs);
    const error = new TrawlError(response.status === 429 ? ErrorCode.HttpThrottled : ErrorCode.HttpServerError, `HTTP ${response.status}`, {
      action: 'retry',
      retryAt: retryAfterAt ?? undefined,
    });
    return outcome(failOutcome(deps, job, error, response, { dueAt: nextDueAt(response.endedAt, after.delayMs, retryAfterAt), health: after.health }));
  }

  const after = delayAfter('success', crawlDelayMs, responseMs);
  // The delay runs from the moment the response ended (the fetcher's clock, which is this
  // process's), not from whenever this line runs: the server finished no later than that.
  return { kind: 'response', response, status, release: { dueAt: response.endedAt + after.delayMs, health: after.health } };
}
