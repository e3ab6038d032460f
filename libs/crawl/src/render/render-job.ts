import { decodeHtml } from '@trawl/parse';
import type { RenderJob } from '@trawl/queue';
import { fingerprint } from '@trawl/url';
import type { Attempt } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import type { Fetched } from '../fetch/fetch-step.js';
import { handOffPage } from '../fetch/hand-off.js';
import { renderDecided, type RenderDeps } from '../fetch/render-step.js';
import { decodeHandedPage, type HandedPage } from '../handed-page.js';
import { HostHold, renewEveryMs } from '../outcome.js';

/** What a render stage works with: the pipeline (to hand the page on as a fetch stage would) and its browser. */
export type RenderStageDeps = PipelineDeps & { render: RenderDeps };

/** Why a render job ended as it did (the BullMQ job's return value). */
export interface RenderJobSummary {
  rendered: boolean;
  reason: string;
  handedOff: string | null;
}

/**
 * One render job, the render stage (see docs/architecture.md, "Rendering"): a page a fetch stage
 * without a browser fetched and stored, whose host it left held. The stage takes the host over
 * with the fetch attempt's own token (the gate lets that token through and no other while the
 * lease lives), renders the page from the stored body (never fetched again) with every request
 * the browser makes in the host's turns, releases the host at the last response's end plus the
 * delay, and hands the page to the process stage exactly as a rendering fetch stage does. A host
 * no longer held (the lease expired, was freed, or the host paused) is not rendered under: the
 * page is handed on unrendered (`render lease lost`), nothing lost.
 *
 * A render stage that dies leaves its job active under a lock that lapses: BullMQ hands it to
 * another, which takes the host over again with the same token and renders from the stored body.
 */
export async function processRenderJob(deps: RenderStageDeps, job: RenderJob, signal?: AbortSignal): Promise<RenderJobSummary> {
  const page = decodeHandedPage(job.page);
  if ('error' in page) {
    deps.counters.add('processInvalid');
    deps.logger.warn({ reason: page.error }, 'a render job names no page that can be read: dropped (its lease returns the URL to the frontier)');
    return { rendered: false, reason: `unreadable: ${page.error}`, handedOff: null };
  }
  const policy = await deps.policy.get();
  if (!policy) throw new Error('no crawl policy yet: the render job is tried again');
  const attempt = attemptOfPage(page, job.token, signal);
  const hold = new HostHold(deps, ticketOf(page, job.token));
  const gate = await deps.frontier.acquire(hold.ticket);
  if (gate.kind !== 'ok') {
    // 'not-due' left the claim with this lease: hand it back (the due time stands).
    if (gate.kind === 'not-due') {
      hold.acquired();
      await hold.release({ dueAt: gate.at });
    }
    deps.counters.add('renderLeaseLost');
    return handOnUnrendered(deps, attempt, hold, page, await bodyOf(deps, page), `${job.reason}; render lease lost (${gate.kind})`);
  }
  hold.acquired();
  const heldSince = deps.clock.now();
  const lease = keepRenderLease(deps, hold);
  try {
    const body = await bodyOf(deps, page);
    const fetched: Fetched = { response: { ...page.response, body }, status: 'ok', release: { dueAt: job.hostDueAt, ...(job.health ? { health: job.health } : {}) } };
    const html = decodeHtml(body, page.response.charset).text;
    const verdict = { render: true as const, decision: { render: true, reason: job.reason, sample: false }, html };
    const rendered = await renderDecided(deps, attempt, policy, fetched, verdict, heldSince);
    await hold.release({ ...rendered.release, fetched: true }, deps.clock.now() + deps.leaseMs);
    const outcome = await handOffPage(deps, attempt, hold, rendered);
    const handedOff = outcome.result.outcome === 'done' ? String((outcome.result.summary as { handedOff?: string }).handedOff ?? '') : null;
    return { rendered: rendered.render?.rendered ?? false, reason: rendered.render?.reason ?? job.reason, handedOff };
  } finally {
    lease.stop();
    // An exception escaped (BullMQ tries the job again, which takes the host over again): the
    // host is released now so it is not held while the job waits.
    if (hold.holding) await hold.release({ dueAt: Math.max(job.hostDueAt, deps.clock.now()) }).catch(() => undefined);
  }
}

/** The page as fetched, with why it was not rendered, handed to the process stage (or recorded here if the lease is gone). */
async function handOnUnrendered(deps: RenderStageDeps, attempt: Attempt, hold: HostHold, page: HandedPage, body: Buffer, reason: string): Promise<RenderJobSummary> {
  deps.logger.warn({ url: page.job.url, reason }, 'render stage no longer holds the page\'s host: the page is processed unrendered');
  const fetched: Fetched = { response: { ...page.response, body }, status: 'ok', release: { dueAt: 0 }, render: { rendered: false, reason, dom: null } };
  const outcome = await handOffPage(deps, attempt, hold, fetched);
  const handedOff = outcome.result.outcome === 'done' ? String((outcome.result.summary as { handedOff?: string }).handedOff ?? '') : null;
  return { rendered: false, reason, handedOff };
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

/** Renews the lease while the page renders (a render ends well within one lease; this covers a slow store or browser). */
function keepRenderLease(deps: RenderStageDeps, hold: HostHold): { stop(): void } {
  const { ticket } = hold;
  const timer = setInterval(() => {
    deps.frontier.extendLease(ticket.partition, ticket.leaseId, deps.clock.now() + deps.leaseMs).catch((error: unknown) => deps.logger.warn({ err: error, leaseId: ticket.leaseId }, 'could not renew a lease'));
  }, renewEveryMs(deps));
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
