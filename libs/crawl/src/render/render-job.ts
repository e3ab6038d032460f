// The decoder alone: the HTML parser is the analysis thread's.
import { decodeHtml } from '@trawl/parse/decode';
import { type RenderJob, RenderLater } from '@trawl/queue';
import { fingerprint } from '@trawl/url';
import type { Attempt } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import type { Fetched } from '../fetch/fetch-step.js';
import { handOffPage } from '../fetch/hand-off.js';
import { renderDecided, type RenderDeps } from '../fetch/render-step.js';
import { decodeHandedPage, type HandedPage } from '../handed-page.js';
import { HostHold, type JobOutcome } from '../outcome.js';

/** What a render stage works with: the pipeline (to hand the page on as a fetch stage would) and its browser. */
export type RenderStageDeps = PipelineDeps & { render: RenderDeps };

/** One delivery of a render job: its own token (BullMQ's lock), how long its hold lasts unrenewed, its abort signal. */
export interface RenderAttempt {
  token: string;
  /** The host's token is this attempt's this long after each renewal (it renews every third of it). */
  aliveMs: number;
  signal?: AbortSignal;
  /**
   * The job's last try: what would be thrown for a retry hands the page to the process stage
   * unrendered instead, so its lease is not left to lapse and the page fetched again.
   */
  last?: boolean;
}

/** Why a render job ended as it did (the BullMQ job's return value). */
export interface RenderJobSummary {
  rendered: boolean;
  reason: string;
  handedOff: string | null;
}

/**
 * Another delivery of the same render job holds the host and is alive: this one waits until the
 * host's token would lapse (`RenderLater`: not a failed try, however long that delivery lives).
 */
export class RenderHostBusy extends RenderLater {
  readonly code = 'ERR_RENDER_HOST_BUSY';

  constructor(retryAt: number) {
    super(retryAt, 'another delivery of this render job holds the host');
  }

  /** When the other delivery's token lapses (`RenderLater.at`). */
  get retryAt(): number {
    return this.at;
  }
}

/** This delivery lost the host or its job mid-render to another delivery of the job, which goes on with it. */
class RenderHostTaken extends Error {}

/**
 * One render job, the render stage (see docs/architecture.md, "Rendering"): a page a fetch stage
 * without a browser fetched and stored, whose host it left held. The stage takes the host's token
 * over from the fetch attempt (`Frontier.takeHost`: the lease keeps the host throughout), renders
 * the page from the stored body (never fetched again) with every request the browser makes in the
 * host's turns, releases the host at the last response's end plus the delay, and hands the page
 * to the process stage exactly as a rendering fetch stage does. A host no longer held (the lease
 * expired or was freed) is not rendered under: the page is handed on unrendered (`render lease
 * lost`), nothing lost.
 *
 * A render stage that dies stops renewing its token: BullMQ hands the job to another after its
 * lock lapses, which takes the host over once the token has lapsed too and renders from the body.
 */
export async function processRenderJob(deps: RenderStageDeps, job: RenderJob, attempt: RenderAttempt): Promise<RenderJobSummary> {
  try {
    return await renderOnce(deps, job, attempt);
  } catch (error) {
    const page = decodeHandedPage(job.page);
    if (!(error instanceof RenderLater)) {
      const url = 'error' in page ? undefined : page.job.url;
      deps.logger.warn({ err: error, url, last: attempt.last === true }, 'a render delivery failed: its job is tried again, or handed on unrendered on its last try');
    }
    // Tries left, a wait for the host, or another delivery at work: BullMQ goes on with the job.
    if (!attempt.last || error instanceof RenderLater || error instanceof RenderHostTaken || 'error' in page) throw error;
    // The last try failed: the page goes to the process stage as fetched, from its stored body,
    // rather than stay leased until the lease lapses and the URL is fetched again. A host the
    // lease still holds (the try failed before it took the host, or gave it back) is released
    // first: a handed-off lease never lapses, so nothing else would free it.
    const hold = new HostHold(deps, ticketOf(page, attempt.token));
    const taken = await deps.frontier.takeHost(hold.ticket, job.token, attempt.aliveMs);
    if (taken.kind === 'busy') throw new RenderHostBusy(taken.at);
    if (taken.kind === 'handed') return { rendered: false, reason: 'handed off by an earlier delivery', handedOff: null };
    if (taken.kind === 'ok') {
      hold.acquired();
      const dueAt = Math.max(job.hostDueAt, taken.dueAt);
      await hold.release({ dueAt });
      await addressSlotsOf(deps, job, hold.ticket.leaseId).release(dueAt);
    }
    deps.counters.add('renderFailed');
    const reason = `${job.reason}; render failed on its last try: ${error instanceof Error ? error.message : String(error)}`;
    return handOnUnrendered(deps, attemptOfPage(page, attempt.token, attempt.signal), hold, page, await bodyOf(deps, page), reason);
  }
}

async function renderOnce(deps: RenderStageDeps, job: RenderJob, attempt: RenderAttempt): Promise<RenderJobSummary> {
  const page = decodeHandedPage(job.page);
  if ('error' in page) {
    deps.counters.add('processInvalid');
    deps.logger.warn({ reason: page.error }, 'a render job names no page that can be read: dropped (its lease returns the URL to the frontier)');
    return { rendered: false, reason: `unreadable: ${page.error}`, handedOff: null };
  }
  const policy = await deps.policy.get();
  if (!policy) throw new Error('no crawl policy yet: the render job is tried again');
  const hold = new HostHold(deps, ticketOf(page, attempt.token));
  // A claim an earlier delivery freed before it died (it gave the host back after rendering and
  // never handed the page on) is taken again, so the page is rendered rather than handed on
  // unrendered; not where an address group's turn went with the host, which is not taken again.
  const retake = deps.addresses === undefined || job.addressSlots.length === 0;
  const taken = await deps.frontier.takeHost(hold.ticket, job.token, attempt.aliveMs, { retake });
  if (taken.kind === 'busy') throw new RenderHostBusy(taken.at);
  const slots = addressSlotsOf(deps, job, hold.ticket.leaseId);
  if (taken.kind !== 'ok') {
    // No longer this lease's host: the address group's turn it kept with the host ends too (an
    // earlier delivery that handed the page on freed it already; freeing again changes nothing).
    await slots.release(job.hostDueAt).catch((error: unknown) => deps.logger.warn({ err: error }, 'could not release a render\'s address slots: they lapse with its lease'));
  }
  if (taken.kind === 'handed') return { rendered: false, reason: 'handed off by an earlier delivery', handedOff: null };
  const pageAttempt = attemptOfPage(page, attempt.token, attempt.signal);
  // A lease gone because an earlier delivery's page was recorded and acknowledged: nothing is left to do.
  if (taken.kind === 'stale' && (await recordedAlready(deps, pageAttempt))) return { rendered: false, reason: 'recorded by an earlier delivery', handedOff: null };
  if (taken.kind !== 'ok') {
    deps.counters.add('renderLeaseLost');
    return handOnUnrendered(deps, pageAttempt, hold, page, await bodyOf(deps, page), `${job.reason}; render lease lost (${taken.kind})`);
  }
  hold.acquired();
  const heldSince = deps.clock.now();
  const keeper = keepRenderHold(deps, hold, attempt, slots, job.token);
  try {
    const body = await bodyOf(deps, page);
    // The host's due time may be past the job's: an earlier delivery gave the host back for this
    // lease after its browser's requests (see below).
    const dueAt = Math.max(job.hostDueAt, taken.dueAt);
    const fetched: Fetched = { response: { ...page.response, body }, status: 'ok', release: { dueAt, ...(job.health ? { health: job.health } : {}) } };
    const html = decodeHtml(body, page.response.charset).text;
    const verdict = { render: true as const, decision: { render: true, reason: job.reason, sample: job.sample }, html };
    const rendered = await renderDecided(deps, { ...pageAttempt, signal: keeper.signal }, policy, fetched, verdict, heldSince);
    await keeper.stop();
    if (keeper.lost) {
      // Another delivery holds the host now (under this lease): release nothing, hand on nothing.
      hold.passOn();
      throw new RenderHostTaken(`the render of ${page.job.url} lost its host mid-render: another delivery has it`);
    }
    if (attempt.signal?.aborted) {
      // BullMQ took the job from this delivery (its lock lapsed: the process stalled) and aborted
      // the render: another delivery renders the page. The host is given back for this lease,
      // due after the browser's last request, so that delivery takes it over at once rather than
      // find it gone to another lease (and hand the page on unrendered).
      await hold.release({ dueAt: rendered.release.dueAt, keepHost: true }, deps.clock.now() + deps.leaseMs);
      throw new RenderHostTaken(`the render of ${page.job.url} was aborted: its job went to another delivery`);
    }
    await hold.release({ ...rendered.release, fetched: true }, deps.clock.now() + deps.leaseMs);
    await slots.release(rendered.release.dueAt);
    const outcome = await handOffPage(deps, pageAttempt, hold, rendered, true);
    return { rendered: rendered.render?.rendered ?? false, reason: rendered.render?.reason ?? job.reason, handedOff: handedOffOf(outcome) };
  } finally {
    await keeper.stop();
    // An exception escaped: BullMQ tries the job again. The host's token is freed but the host
    // stays this lease's (with its address group's turn), due the page's delay from now (the
    // browser may have made a request a moment ago), so the next delivery takes it over and
    // renders. Freed in full, another lease could take the host first, and the page would go on
    // unrendered (`render lease lost`), its links only the rendered DOM has never found. The
    // host's other URLs wait for the retry's back-off (seconds); the last try's fallback
    // (`processRenderJob`) frees the host and the turn whatever happens.
    const delayMs = Math.max(0, job.hostDueAt - page.response.endedAt);
    if (hold.holding) await hold.release({ dueAt: Math.max(job.hostDueAt, deps.clock.now() + delayMs), keepHost: true }).catch(() => undefined);
  }
}

const handedOffOf = (outcome: JobOutcome): string | null =>
  outcome.result.outcome === 'done' ? String((outcome.result.summary as { handedOff?: string } | undefined)?.handedOff ?? '') : null;

/** The page as fetched, with why it was not rendered, handed to the process stage (or recorded here if the lease is gone). */
async function handOnUnrendered(deps: RenderStageDeps, attempt: Attempt, hold: HostHold, page: HandedPage, body: Buffer, reason: string): Promise<RenderJobSummary> {
  deps.logger.warn({ url: page.job.url, reason }, 'render stage no longer holds the page\'s host: the page is processed unrendered');
  const fetched: Fetched = { response: { ...page.response, body }, status: 'ok', release: { dueAt: 0 }, render: { rendered: false, reason, dom: null } };
  // Handed off whoever marked the lease fetched (the fetch attempt, or an earlier delivery): the
  // host may be another lease's by now, the page is this one's.
  return { rendered: false, reason, handedOff: handedOffOf(await handOffPage(deps, attempt, hold, fetched, true)) };
}

/** Whether PostgreSQL has the page recorded (its lease acknowledged since: not a lease lost). */
async function recordedAlready(deps: Pick<PipelineDeps, 'urlStates'>, attempt: Attempt): Promise<boolean> {
  const state = (await deps.urlStates?.state(attempt.hash)) ?? null;
  return state === 'done' || state === 'skipped';
}

/** The stored body the fetch stage named; a missing one is an error BullMQ retries (a store briefly unreachable). */
async function bodyOf(deps: Pick<PipelineDeps, 'store' | 'bodies'>, page: HandedPage): Promise<Buffer> {
  if (!page.body) throw new Error(`a render job for ${page.job.url} names no stored body`);
  const body = deps.bodies?.take(page.body.key) ?? (await deps.store.get(page.body.key));
  if (!body) throw new Error(`the stored body ${page.body.key} of ${page.job.url} is not in the content store`);
  return body;
}

const ticketOf = (page: HandedPage, token: string) => ({
  partition: page.job.partition,
  host: page.job.host,
  leaseId: page.job.leaseId ?? '',
  token,
  band: page.job.band,
  entry: { url: page.job.url, depth: page.job.depth, maxDepth: page.job.maxDepth, hops: page.job.hops, flags: page.job.flags },
});

const attemptOfPage = (page: HandedPage, token: string, signal: AbortSignal | undefined): Attempt => ({
  id: page.job.leaseId ?? token,
  job: page.job,
  token,
  attempt: 1,
  maxAttempts: 1,
  signal,
  hash: fingerprint(page.job.url),
});

/**
 * The address group slots a fetch stage kept with the page's host (TRAWL_POLITENESS_KEY `ip` or
 * `domain`, or a shared address's cap): held as long as the lease, in the lease's name, and freed
 * when the host is, after the delay its release asks. None without an address gate.
 */
function addressSlotsOf(deps: RenderStageDeps, job: RenderJob, leaseId: string): { keep(): Promise<void>; release(nextAt: number): Promise<void> } {
  const { addresses } = deps;
  const held = job.addressSlots;
  if (addresses === undefined || held.length === 0) return { keep: async () => undefined, release: async () => undefined };
  return {
    keep: () => addresses.keep(held, leaseId, deps.leaseMs),
    release: (nextAt) => addresses.release(held, leaseId, nextAt, deps.leaseMs),
  };
}

/**
 * Keeps the host's token this attempt's (every third of `aliveMs`), and the lease and its address
 * slots alive, while the page renders. A token taken over meanwhile (this process stalled past
 * `aliveMs`) ends the render at once: it is no longer rendered under a host this attempt holds.
 */
function keepRenderHold(
  deps: RenderStageDeps,
  hold: HostHold,
  attempt: RenderAttempt,
  slots: { keep(): Promise<void> },
  /** The fetch attempt's token: its mark on the lease (`markHandedToRender`) lives as long as the lease. */
  fetchToken: string,
): { signal: AbortSignal; readonly lost: boolean; stop(): Promise<void> } {
  const { ticket } = hold;
  const lost = new AbortController();
  const renew = async () => {
    const until = deps.clock.now() + deps.leaseMs;
    const [taken] = await Promise.all([
      deps.frontier.takeHost(ticket, ticket.token, attempt.aliveMs),
      deps.frontier.extendLease(ticket.partition, ticket.leaseId, until, { token: fetchToken, aliveUntil: until }),
    ]);
    // Kept only while this attempt holds the host: a delivery that took it over keeps them itself.
    if (taken.kind === 'ok') await slots.keep();
    if (taken.kind !== 'ok' && !lost.signal.aborted) {
      deps.counters.add('renderLeaseLost');
      lost.abort(new Error(`the render stage no longer holds ${ticket.host} (${taken.kind})`));
    }
  };
  // The renewal under way, if any: stopping waits for it, so none keeps the token or the address
  // slots after the host is released.
  let renewing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    renewing = renew().catch((error: unknown) => deps.logger.warn({ err: error, leaseId: ticket.leaseId }, 'could not renew a render\'s hold'));
  }, Math.max(50, Math.floor(attempt.aliveMs / 3)));
  timer.unref();
  return {
    signal: attempt.signal ? AbortSignal.any([attempt.signal, lost.signal]) : lost.signal,
    get lost() {
      return lost.signal.aborted;
    },
    stop: async () => {
      clearInterval(timer);
      await renewing;
    },
  };
}
