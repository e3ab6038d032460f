import type { Attempt } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import { encodeHandedPage, type HandedPage, type StoredRef } from '../handed-page.js';
import type { HostHold, JobOutcome } from '../outcome.js';
import { processPage } from '../process/process-entry.js';
import { type StoredBody, storeBody } from '../process/store-body.js';
import type { Fetched } from './fetch-step.js';
import type { RenderedPage } from './render-step.js';

/**
 * The end of the fetch stage for a response worth processing (the host is released already):
 * its body is stored (content-addressed, so a repeat stores nothing new), then the page is
 * handed to the process stage in one step with its lease (`Frontier.handOff`). From then on the
 * page is durable without this process: whatever dies, it is processed from the stored body and
 * never fetched again. A lease that is no longer this attempt's hands off nothing (stale). A
 * page whose host has nothing else queued is handed off as urgent: its host's next fetch waits
 * on its links, so the process stage takes it first. `continuing`: a render stage, carrying on
 * for the lease's fetch (see `Frontier.handOff`).
 */
export async function handOffPage(deps: PipelineDeps, attempt: Attempt, hold: HostHold, fetched: Fetched, continuing = false): Promise<JobOutcome> {
  const { response } = fetched;
  const { body, ...meta } = response;
  const keep = fetched.status === 'ok' && !response.bodySkipped && body.length > 0;
  const stored = keep ? await storeBody(deps.store, body) : null;
  if (stored) deps.bodies?.put(stored.storageKey, body);
  const page: HandedPage = {
    // The lease the page is acknowledged under (a job added by hand has one of the gate's making).
    job: { ...attempt.job, leaseId: hold.ticket.leaseId },
    response: meta,
    body: stored ? refOf(stored, body) : null,
    ...(fetched.render ? { render: await storeRender(deps, fetched.render) } : {}),
  };
  const payload = encodeHandedPage(page);
  const entry = await deps.frontier.handOff(hold.ticket.partition, hold.ticket.leaseId, hold.ticket.token, payload, hold.ticket.host, continuing);
  if (entry === null) {
    // The lease is no longer this attempt's (it expired, or Redis lost the crawl while the page
    // was fetched): no process stream takes it, so it is recorded here, acknowledging nothing —
    // as a fetched page always was. Recording it twice (another copy's attempt) is harmless; not
    // recording it would fetch it again once its URL came back.
    deps.counters.add('stale');
    if (stored) await processPage({ ...deps, maxDeliveries: Number.POSITIVE_INFINITY }, page, undefined, 1);
    return { ack: false, result: { outcome: 'stale' } };
  }
  deps.counters.add('handedOff');
  return { ack: false, result: { outcome: 'done', summary: { status: response.status, handedOff: entry } } };
}

const refOf = (stored: StoredBody, body: Buffer): StoredRef => ({ key: stored.storageKey, contentHash: stored.contentHash, bytes: body.length });

/** The rendered DOM stored beside the body (content-addressed), for the process stage to read. */
async function storeRender(deps: Pick<PipelineDeps, 'store' | 'bodies'>, render: RenderedPage): Promise<NonNullable<HandedPage['render']>> {
  if (render.dom === null) return { rendered: render.rendered, reason: render.reason, dom: null };
  const stored = await storeBody(deps.store, render.dom, 'rendered DOM');
  deps.bodies?.put(stored.storageKey, render.dom);
  return { rendered: render.rendered, reason: render.reason, dom: refOf(stored, render.dom) };
}
