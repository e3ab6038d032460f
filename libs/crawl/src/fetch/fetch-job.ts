import { TrawlError } from '@trawl/core';
import { UrlFlag } from '@trawl/frontier';
import { cachedRefusals, type ResolvedPolicy } from '@trawl/model';
import type { FetchJobContext, JobResult } from '@trawl/queue';
import { inScope } from '@trawl/url';
import { type Attempt, attemptOf } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import { failOutcome, processingFailed } from '../failure.js';
import { applyOutcome, HostHold, type JobOutcome, renewEveryMs } from '../outcome.js';
import { handleSitemap, sitemapFailure } from '../process/sitemap-step.js';
import { type AddressHold, passAddressGate } from './address-step.js';
import { type Fetched, fetchUnderGate, isFetched } from './fetch-step.js';
import { handOffPage } from './hand-off.js';
import { passGate } from './gate.js';
import { type HandOverVerdict, handOverVerdictOf, handToRenderStage } from './render-hand-over.js';
import { renderUnderGate } from './render-step.js';
import { defer, earlyForQueue } from './when.js';

/**
 * One fetch job, the fetch stage: gate → robots.txt → fetch → release the host (its next due time
 * from the politeness model) → store the body → hand the page to the process stage
 * (`handOffPage`), which parses, discovers, records and acknowledges it. A turn that ends here
 * (robots.txt fetched or refusing, a failure to retry or to record, a sitemap) has its outcome
 * carried out by `applyOutcome`, so the order of release, record and ack lives in one place.
 */
export async function processFetchJob(deps: PipelineDeps, ctx: FetchJobContext): Promise<JobResult> {
  const attempt = attemptOf(ctx);
  const { job } = attempt;
  let policy = await deps.policy.get();
  // A URL this copy of the policy calls out of scope was in scope when it was queued: seeds
  // widened the scope since. Read the policy again, or the page's links would be dropped.
  if (policy && !inScope(policy.scope, job.url)) policy = await deps.policy.refresh();
  if (!policy) return defer(deps.clock.now() + 1000).result;

  const hold = new HostHold(deps, {
    partition: job.partition,
    host: job.host,
    leaseId: job.leaseId ?? `job-${ctx.id}`,
    token: ctx.token,
    band: job.band,
    entry: { url: job.url, depth: job.depth, maxDepth: job.maxDepth, hops: job.hops, flags: job.flags },
  });
  const lease = keepLease(deps, hold);
  let finished = false;
  try {
    const outcome = await decide(deps, attempt, hold, policy);
    const result = await applyOutcome(deps, hold, outcome);
    finished = result.outcome === 'done' || result.outcome === 'dead';
    return result;
  } finally {
    // This attempt fetched the page but will not record it (it is retried, or an error or a
    // fatal fault stops it): its next attempt may fetch at once.
    if (hold.fetched && !finished) await deps.frontier.clearFetched(hold.ticket.partition, hold.ticket.leaseId).catch(() => undefined);
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
 * and a Verify job again once it holds the host, as does any job the gate tells to: `force`):
 * a URL recorded since it was queued (queueing sets `urls.state` to new/queued; a record sets
 * done/skipped) was fetched by the earlier attempt, which died after its record and before its
 * ack. Its lease is acknowledged now and nothing is fetched. Null: fetch as usual.
 */
async function alreadyRecorded(deps: PipelineDeps, attempt: Attempt, force = false): Promise<JobOutcome | null> {
  if (!deps.urlStates || (!force && (attempt.job.flags & UrlFlag.Verify) === 0 && !attempt.redelivered)) return null;
  const state = await deps.urlStates.state(attempt.hash);
  if (state !== 'done' && state !== 'skipped') return null;
  deps.counters.add('alreadyRecorded');
  // Never fetched here: hand back the host claim dispatch gave the lease, if it holds it.
  return { release: { dueAt: 0, claimOnly: true }, ack: true, result: { outcome: 'done', summary: { alreadyRecorded: state } } };
}

/** Everything up to the outcome: gate, robots.txt, fetch, then the hand-off (or a sitemap, read here). */
async function decide(deps: PipelineDeps, attempt: Attempt, hold: HostHold, policy: ResolvedPolicy): Promise<JobOutcome> {
  const { counters } = deps;
  const { job } = attempt;
  const repeated = await alreadyRecorded(deps, attempt);
  if (repeated) return repeated;
  // robots.txt already known to forbid this URL: settle it without waiting for the host's turn
  // (nothing is requested; the host's claim, if this lease has it, is handed back).
  const [refusal] = await cachedRefusals({ cache: deps.robots, now: () => deps.clock.now() }, policy, [job.url]);
  if (refusal) {
    counters.add('robotsDisallowed');
    return failOutcome(deps, attempt, new TrawlError(refusal.code, refusal.reason, { action: 'skip' }), null, { dueAt: 0, claimOnly: true });
  }

  const gate = await passGate(deps, attempt, hold);
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
  const heldSince = deps.clock.now();
  // Lateness: the start after the later of the host's due time (politeness) and the moment the
  // host was ready with this URL (the dispatcher's due time; a host idle until then was not late).
  deps.timings?.record('fetchLateness', (deps.clock.now() - Math.max(gate.dueAt, job.hostDueAt ?? 0)) / 1000);
  // A copy of this URL under another lease (a rebuild's beside one pushed after the loss) may
  // have been recorded while this job waited for the host: the gate held it back while that copy
  // was being recorded, so asking again now, with the host held, is the answer that counts.
  // The gate's `verify`: a copy flagged Verify was fetched and acknowledged first, and this one,
  // queued beside it, carries no flag of its own.
  if ((job.flags & UrlFlag.Verify) !== 0 || gate.verify) {
    const recorded = await alreadyRecorded(deps, attempt, true);
    if (recorded) return recorded;
  }

  // The address group's turn (after the host's: a host waiting for its address keeps its own
  // turn, and no worker slot waits; robots.txt below is a request to the address too).
  const turn = await passAddressGate(deps, attempt, hold.ticket.leaseId, { ...policy.policy.politeness, minDelayMs: policy.politeness.minDelayMs });
  if (turn.kind === 'wait') {
    counters.add('addressDeferred');
    // The lease outlives the wait, however long the address's line is.
    return { ...defer(earlyForQueue(deps, turn.at)), release: { dueAt: turn.at, keepHost: true }, leaseUntil: turn.at + deps.leaseMs };
  }
  const sitemap = (job.flags & UrlFlag.Sitemap) !== 0;
  let fetched: Fetched | JobOutcome | undefined;
  let handOver: HandOverVerdict | undefined;
  let addressHeld: AddressHold[] = [];
  try {
    fetched = await fetchUnderGate(deps, attempt, policy, gate.health);
    // A page worth rendering is rendered while its job still holds the host (and its address
    // group's turn): every request the browser makes is one of the host's turns.
    if (deps.render && !sitemap && isFetched(fetched)) fetched = await renderUnderGate({ ...deps, render: deps.render }, attempt, policy, fetched, heldSince);
    // Without a browser here, it is rendered by a render stage, which takes the host over.
    else if (deps.renderHandOver && !sitemap && isFetched(fetched)) {
      handOver = await handOverVerdictOf({ ...deps, renderHandOver: deps.renderHandOver }, attempt, fetched);
      if (!handOver.handOver) fetched = handOver.fetched;
    }
  } finally {
    // A page handed over keeps its address group's turn with its host: the render stage, whose
    // browser requests are the host's next turns, frees both.
    if (handOver?.handOver) addressHeld = turn.handOver();
    // The request has ended (or failed): the group may go on, after the delay the host asks.
    else turn.leave(hostDueAfter(fetched, deps.clock.now()));
  }
  if (!isFetched(fetched)) return sitemap ? sitemapFailure(deps, attempt, fetched) : fetched;
  if (handOver?.handOver && deps.renderHandOver) {
    counters.add('fetched');
    counters.add('bytes', fetched.response.rawBytes || fetched.response.body.length);
    return handToRenderStage({ ...deps, renderHandOver: deps.renderHandOver }, attempt, hold, fetched, handOver.decision, addressHeld);
  }
  // The host is free for its next URL before this one is stored and parsed; the lease runs a full
  // TRAWL_LEASE_MS from here (and is renewed while the job works).
  await hold.release({ ...fetched.release, fetched: true }, deps.clock.now() + deps.leaseMs);
  counters.add('fetched');
  counters.add('bytes', fetched.response.rawBytes || fetched.response.body.length);
  try {
    if (sitemap) return await handleSitemap(deps, attempt, policy, fetched.response);
    return await handOffPage(deps, attempt, hold, fetched);
  } catch (error) {
    return processingFailed(deps, attempt, error);
  }
}

/** The host's next due time a turn's outcome asks for (now when it asked for none, or threw). */
const hostDueAfter = (fetched: Fetched | JobOutcome | undefined, now: number): number =>
  fetched === undefined ? now : isFetched(fetched) ? fetched.release.dueAt : (fetched.release?.dueAt ?? now);
