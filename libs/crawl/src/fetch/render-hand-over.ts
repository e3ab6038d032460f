import type { RenderJob } from '@trawl/queue';
import type { Attempt } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import { encodeHandedPage } from '../handed-page.js';
import type { HostHold, JobOutcome } from '../outcome.js';
import { storeBody } from '../process/store-body.js';
import type { AddressHold } from './address-step.js';
import type { Fetched } from './fetch-step.js';
import { type RenderChoice, type RenderDecision, renderVerdictOf } from './render-step.js';

/**
 * A fetch stage without the `render` role (TRAWL_WORKER_ROLES): it decides which pages to render
 * as a rendering stage would, but never starts a browser. It hands those pages to a render stage
 * with their host still held (see docs/architecture.md, "Rendering").
 */
export interface RenderHandOverDeps extends RenderChoice {
  /** The render queue. */
  queue: { add(id: string, job: RenderJob): Promise<void> };
  /** Whether a render stage is alive now (asked only for a page to render). */
  alive: () => Promise<boolean>;
}

/** What a fetch stage without a browser does with a fetched page: hand it over (`decision`), or keep it as it is. */
export type HandOverVerdict = { handOver: true; decision: RenderDecision } | { handOver: false; fetched: Fetched };

/**
 * The page is rendered elsewhere when it is one to render and a render stage is alive; otherwise
 * it stays as fetched, with why it is not rendered (`no render worker` when none is alive: a
 * fleet without a renderer never holds its hosts for one).
 */
export async function handOverVerdictOf(deps: Pick<PipelineDeps, 'counters'> & { renderHandOver: RenderHandOverDeps }, attempt: Attempt, fetched: Fetched): Promise<HandOverVerdict> {
  const verdict = await renderVerdictOf(deps.renderHandOver, attempt, fetched);
  if (verdict === null) return { handOver: false, fetched };
  if (!verdict.render) return { handOver: false, fetched: { ...fetched, render: verdict.page } };
  // A sample handed over stays claimed in the crawl's shared learner until the render stage
  // reports its comparison there (or the claim lapses): a host's first samples are rendered,
  // then what the verdict says, never every page with a script.
  if (await deps.renderHandOver.alive()) return { handOver: true, decision: verdict.decision };
  if (verdict.decision.sample) await deps.renderHandOver.learner.abandon(attempt.job.host).catch(() => undefined);
  deps.counters.add('renderNoWorker');
  return { handOver: false, fetched: { ...fetched, render: { rendered: false, reason: `${verdict.decision.reason}; no render worker`, dom: null } } };
}

/**
 * Hands a fetched page to the render stage, the host still held: the body is stored, this
 * worker stops counting the lease among its holds (its death must not send the URL back to be
 * fetched), and a render job naming the stored body, the response and the host's token is added
 * — durable before this fetch job completes. The render stage takes the host over with the same
 * token, renders, releases the host and hands the page to the process stage.
 */
export async function handToRenderStage(
  deps: Pick<PipelineDeps, 'store' | 'frontier' | 'counters' | 'clock' | 'leaseMs' | 'addresses'> & { renderHandOver: RenderHandOverDeps },
  attempt: Attempt,
  hold: HostHold,
  fetched: Fetched,
  decision: RenderDecision,
  addressHeld: readonly AddressHold[] = [],
): Promise<JobOutcome> {
  try {
    return await handOver(deps, attempt, hold, fetched, decision, addressHeld);
  } catch (error) {
    // Not handed over: the job fails with the host released (its `finally`), and the address slots with it.
    if (addressHeld.length > 0) await deps.addresses?.release(addressHeld, hold.ticket.leaseId, fetched.release.dueAt, deps.leaseMs).catch(() => undefined);
    throw error;
  }
}

async function handOver(
  deps: Pick<PipelineDeps, 'store' | 'frontier' | 'counters' | 'clock' | 'leaseMs' | 'addresses'> & { renderHandOver: RenderHandOverDeps },
  attempt: Attempt,
  hold: HostHold,
  fetched: Fetched,
  decision: RenderDecision,
  addressHeld: readonly AddressHold[],
): Promise<JobOutcome> {
  const { ticket } = hold;
  const { body, ...response } = fetched.response;
  const stored = await storeBody(deps.store, body);
  const page = encodeHandedPage({
    job: { ...attempt.job, leaseId: ticket.leaseId },
    response,
    body: { key: stored.storageKey, contentHash: stored.contentHash, bytes: body.length },
  });
  // The lease must outlive the render job's wait in the queue (the render stage renews it from
  // there), and the address group's slots the lease (so they are held while its host is).
  await deps.frontier.extendLease(ticket.partition, ticket.leaseId, deps.clock.now() + deps.leaseMs);
  if (addressHeld.length > 0) await deps.addresses?.keep(addressHeld, ticket.leaseId, deps.leaseMs);
  await deps.frontier.passHold(ticket.partition, ticket.leaseId);
  await deps.renderHandOver.queue.add(`${ticket.leaseId}:${ticket.token}`, {
    page,
    token: ticket.token,
    hostDueAt: fetched.release.dueAt,
    ...(fetched.release.health ? { health: fetched.release.health } : {}),
    reason: decision.reason,
    sample: decision.sample,
    addressSlots: addressHeld.map((slot) => ({ ...slot })),
  });
  // A fetch job of this lease redelivered while the page waits for its render (this job's lock
  // lapsed) must not fetch it again. Best effort: without the mark it would, as before.
  await deps.frontier.markHandedToRender(ticket.partition, ticket.leaseId, ticket.token, deps.clock.now() + deps.leaseMs).catch(() => undefined);
  hold.passOn();
  deps.counters.add('renderHandedOver');
  return { ack: false, result: { outcome: 'done', summary: { status: response.status, renderHandedOver: true } } };
}
