import { type Clock, sleep } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import { cachedRefusals, type RenderOverride, type RenderOverrides, type ResolvedPolicy } from '@trawl/model';
// The decoder alone: the HTML parser is the analysis thread's.
import { decodeHtml } from '@trawl/parse/decode';
import {
  type BeforeRequest,
  type ClassifierSettings,
  type FetchedResponse,
  needsRendering,
  type RenderFetch,
  type Renderer,
  type RenderLearner,
  type RenderResult,
  RequestRefused,
  type SsrfCheck,
  type SubresourceCache,
} from '@trawl/render';
import { hostOf } from '@trawl/url';
import type { Attempt } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import { inlineAnalyzer } from '../process/analyzer.js';
import { isHtml } from '../process/store-body.js';
import type { Fetched } from './fetch-step.js';
import { otherHostFetch, type OtherHostDeps, otherHostRefusals } from './other-hosts.js';

/** Rendering in the fetch stage (TRAWL_RENDER `auto` or `always`; absent: `never`). */
export interface RenderDeps {
  renderer: Renderer;
  mode: 'auto' | 'always';
  /** Per host, whether rendering pays (`auto`). */
  learner: RenderLearner;
  /** Operators' per-host overrides (`always`, `never`), over `mode` (absent: none). */
  overrides?: Pick<RenderOverrides, 'of'>;
  /** The classifier's thresholds, and whether other hosts' scripts load (absent: the defaults, they do not). */
  classifier?: ClassifierSettings;
  /** Scripts and styles shared by a host's pages (fetched once per process). */
  cache?: SubresourceCache;
  /** The fetch lib's address rule, asked before each request a page makes. */
  ssrfCheck?: SsrfCheck;
  /** TRAWL_RENDER_TIMEOUT_MS. */
  timeoutMs: number;
  /** How long a fetch may hold its host's token (the fetch deadline plus margin): a render ends well within it. */
  maxHoldMs: number;
}

/** Whether a page was rendered, and why (or why not). `dom`: the serialized rendered DOM. */
export interface RenderedPage {
  rendered: boolean;
  reason: string;
  dom: Buffer | null;
}

export interface RenderDecision {
  render: boolean;
  reason: string;
  /** The page is one of its host's samples: its plain and rendered yields go to the learner. */
  sample: boolean;
}

/** A render must end this long before the host's token could lapse. */
const HOLD_MARGIN_MS = 2000;
/** Below this, a render is not started at all. */
const LEAST_RENDER_MS = 500;

/**
 * Render this page? An operator's override for the host first; then `always` renders every HTML
 * page, and `auto` asks the classifier, then the host's learnt verdict.
 */
export async function renderDecisionOf(
  mode: RenderDeps['mode'],
  learner: RenderLearner,
  host: string,
  html: string,
  url: string,
  override: RenderOverride | null = null,
  classifier?: ClassifierSettings,
): Promise<RenderDecision> {
  if (override !== null) return { render: override === 'always', reason: `host set to ${override}`, sample: false };
  if (mode === 'always') return { render: true, reason: 'always', sample: false };
  return learner.decide(host, needsRendering(html, url, classifier));
}

/**
 * No `<script` tag anywhere in the body's bytes (any case, followed by a character that ends the
 * name), in a charset where ASCII is ASCII (not UTF-16, declared or by its byte-order mark):
 * `needsRendering` would answer `no-scripts`. No string is made.
 */
function scriptless(response: FetchResult): boolean {
  const { body, charset } = response;
  if (charset !== null && charset !== undefined && /^utf-?16/i.test(charset)) return false;
  if (body.length >= 2 && ((body[0] === 0xff && body[1] === 0xfe) || (body[0] === 0xfe && body[1] === 0xff))) return false;
  return !hasScriptTag(body);
}

const OPENINGS = [Buffer.from('<s'), Buffer.from('<S')];
/** "cript" after "<s", compared case-insensitively (byte | 0x20). */
const CRIPT = [0x63, 0x72, 0x69, 0x70, 0x74];

/**
 * `/<script\b/i` over bytes read as latin1: every `<s` or `<S` is found by Buffer.indexOf (native,
 * ~10 µs over a 45 KB page, against ~90 µs for a byte loop in JavaScript and ~130 µs for the
 * regular expression over a latin1 copy), and the rest of the name checked there.
 */
export function hasScriptTag(body: Uint8Array): boolean {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  for (const opening of OPENINGS) {
    for (let i = bytes.indexOf(opening); i !== -1; i = bytes.indexOf(opening, i + 2)) {
      let k = 0;
      while (k < CRIPT.length && ((bytes[i + 2 + k] as number) | 0x20) === CRIPT[k]) k++;
      if (k === CRIPT.length && !isWordByte(bytes[i + 2 + CRIPT.length])) return true;
    }
  }
  return false;
}

/** A byte `\b` counts as a word character: [A-Za-z0-9_] (undefined: the end of the body). */
function isWordByte(byte: number | undefined): boolean {
  if (byte === undefined) return false;
  const lower = byte | 0x20;
  return (lower >= 0x61 && lower <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte === 0x5f;
}

/** A 200 HTML page with its whole body: the only kind worth a browser. */
const renderable = (fetched: Fetched): boolean =>
  fetched.status === 'ok' && !fetched.response.bodySkipped && !fetched.response.truncated && fetched.response.body.length > 0 && isHtml(fetched.response);

/** What rendering needs to decide about a page (a fetch stage without a browser has this much). */
export type RenderChoice = Pick<RenderDeps, 'mode' | 'learner' | 'overrides' | 'classifier'>;

/** A page to render (`decision`, and its decoded HTML), or the answer that it is not rendered. */
export type RenderVerdict = { render: true; decision: RenderDecision; html: string } | { render: false; page: RenderedPage };

/**
 * Whether a fetched page is rendered, before anything is rendered: null for a response that is no
 * page to render (not a 200 HTML page with its whole body).
 */
export async function renderVerdictOf(choice: RenderChoice, attempt: Pick<Attempt, 'job'>, fetched: Fetched): Promise<RenderVerdict | null> {
  if (!renderable(fetched)) return null;
  const { job } = attempt;
  const override = (await choice.overrides?.of(job.host)) ?? null;
  // Most pages of a plain site: no script tag at all, so the classifier's answer is known without
  // decoding the page on this loop.
  if (override === null && choice.mode === 'auto' && scriptless(fetched.response)) return { render: false, page: { rendered: false, reason: 'no-scripts', dom: null } };
  const html = decodeHtml(fetched.response.body, fetched.response.charset).text;
  const decision = await renderDecisionOf(choice.mode, choice.learner, job.host, html, job.url, override, choice.classifier);
  if (!decision.render) return { render: false, page: { rendered: false, reason: decision.reason, dom: null } };
  return { render: true, decision, html };
}

/**
 * The render of a fetched page, while its job still holds the host (see docs/architecture.md,
 * "Rendering"): the browser's every request to the host goes through the fetcher, one at a time,
 * each starting no earlier than the host's delay after the previous response ended (the page's
 * own response first), refused when robots.txt disallows it; a request to another host (when the
 * renderer's policy allows one) borrows that host's gate for itself or is refused at once, never
 * waited for (see other-hosts.ts). The host's next due time becomes the last response's end plus
 * the delay. A render that fails keeps the HTTP page as it is, with the reason.
 */
export async function renderUnderGate(deps: RenderStepDeps, attempt: Attempt, policy: ResolvedPolicy, fetched: Fetched, heldSince: number): Promise<Fetched> {
  const verdict = await renderVerdictOf(deps.render, attempt, fetched);
  if (verdict === null) return fetched;
  if (!verdict.render) return { ...fetched, render: verdict.page };
  return renderDecided(deps, attempt, policy, fetched, verdict, heldSince);
}

export type RenderStepDeps = Pick<PipelineDeps, 'clock' | 'fetcher' | 'robots' | 'counters' | 'logger' | 'analyzer' | 'addresses'> & {
  render: RenderDeps;
  /**
   * Where requests to other hosts borrow those hosts' gates (absent: every such request is
   * refused). Only requests the renderer's policy lets through get here (TRAWL_RENDER_OTHER_HOSTS,
   * TRAWL_RENDER_ALLOW_HOSTS).
   */
  frontier?: OtherHostDeps['frontier'];
};

/**
 * Renders a page decided for rendering, under the host held since `heldSince` (the render ends
 * before the host's token could lapse). The browser's first request waits for the host's due time
 * after the page's own response (`fetched.release.dueAt`).
 */
export async function renderDecided(
  deps: RenderStepDeps,
  attempt: Pick<Attempt, 'job' | 'signal'>,
  policy: ResolvedPolicy,
  fetched: Fetched,
  verdict: RenderVerdict & { render: true },
  heldSince: number,
): Promise<Fetched> {
  const { render, clock } = deps;
  const { job } = attempt;
  const { decision, html } = verdict;
  const holdLeftMs = heldSince + render.maxHoldMs - HOLD_MARGIN_MS - clock.now();
  const timeoutMs = Math.min(render.timeoutMs, holdLeftMs);
  if (timeoutMs < LEAST_RENDER_MS) {
    if (decision.sample) await abandonSample(deps, render.learner, job.host);
    return { ...fetched, render: { rendered: false, reason: `${decision.reason}; no time left under the host's hold`, dom: null } };
  }
  const turns = new HostTurns(clock, fetched.release.dueAt, Math.max(0, fetched.release.dueAt - fetched.response.endedAt));
  // The render's timeout does not count its wait for a browser page (TRAWL_RENDER_CONCURRENCY):
  // this signal ends it, waiting or not, before the host's token could lapse.
  const holdEnds = AbortSignal.timeout(holdLeftMs);
  const signal = attempt.signal ? AbortSignal.any([attempt.signal, holdEnds]) : holdEnds;
  const holdEndsAt = clock.now() + holdLeftMs;
  const result = await render.renderer.render(job.url, {
    document: toFetchedResponse(fetched.response),
    fetch: routedFetch(deps, policy, job.host, gatedFetch(deps.fetcher, turns, signal), () => holdEndsAt - clock.now(), signal),
    beforeRequest: underThisGate(deps, policy, job.host),
    ...(render.ssrfCheck ? { ssrfCheck: render.ssrfCheck } : {}),
    ...(render.cache ? { cache: render.cache } : {}),
    timeoutMs,
    signal,
  });
  const subrequests = result.requests.filter((r) => r.outcome === 'fetched').length;
  if (subrequests > 0) deps.counters.add('renderRequests', subrequests);
  const release = { ...fetched.release, dueAt: Math.max(fetched.release.dueAt, turns.dueAt) };
  // Why a script from another host is missing from the page, for an operator to see.
  const refusals = otherHostRefusals(result.requests);
  const reason = (text: string) => (refusals === '' ? text : `${text}; ${refusals}`);
  if (!result.ok) {
    deps.counters.add('renderFailed');
    if (decision.sample) await abandonSample(deps, render.learner, job.host);
    deps.logger.warn({ url: job.url, code: result.error.code, reason: result.error.message }, 'render failed: the page is kept as fetched');
    return { ...fetched, release, render: { rendered: false, reason: reason(`${decision.reason}; render failed: ${result.error.code}`), dom: null } };
  }
  deps.counters.add('rendered');
  if (decision.sample) {
    await learnFrom(deps, render.learner, policy, job, html, result).catch(async (error: unknown) => {
      deps.logger.warn({ err: error, url: job.url }, 'could not compare a rendered sample with its HTML');
      await abandonSample(deps, render.learner, job.host);
    });
  }
  return { ...fetched, release, render: { rendered: true, reason: reason(decision.reason), dom: Buffer.from(result.html, 'utf8') } };
}

/** A sample's plain and rendered links and text, compared by the learner (parsed here: a few pages per host). */
async function learnFrom(
  deps: Pick<PipelineDeps, 'analyzer'>,
  learner: RenderLearner,
  policy: ResolvedPolicy,
  job: Attempt['job'],
  html: string,
  result: RenderResult & { ok: true },
): Promise<void> {
  const analyzer = deps.analyzer ?? inlineAnalyzer;
  const yieldOf = async (markup: string) => {
    const { parsed } = await analyzer.analyze({ body: Buffer.from(markup, 'utf8'), charset: 'utf-8', url: job.url, maxLinks: policy.policy.maxLinksPerPage, productToken: policy.robots.productToken });
    return { links: parsed.links.map((link) => link.url), textChars: parsed.text.text.length };
  };
  const [plain, rendered] = await Promise.all([yieldOf(html), yieldOf(result.html)]);
  await learner.observe(job.host, plain, rendered);
}

/**
 * Frees a sample's slot for another page. A learner whose store cannot be reached only costs the
 * slot until it lapses (the learner's `claimTtlMs`), never the page.
 */
async function abandonSample(deps: Pick<PipelineDeps, 'logger'>, learner: RenderLearner, host: string): Promise<void> {
  await learner.abandon(host).catch((error: unknown) => deps.logger.warn({ err: error, host }, 'could not free a render sample\'s slot; it lapses'));
}

/**
 * The host's turns for the browser's requests: one at a time, each starting no earlier than
 * `delayMs` after the previous response ended (the first no earlier than the host's due time
 * after the page's own response). `dueAt` is when the host may be fetched after the last one.
 */
export class HostTurns {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly clock: Clock,
    private next: number,
    private readonly delayMs: number,
  ) {}

  get dueAt(): number {
    return this.next;
  }

  take<T>(request: () => Promise<{ value: T; endedAt: number }>): Promise<T> {
    const turn = this.queue.then(async () => {
      // The clock counts whole milliseconds: wait until the due one has passed (as the gate does).
      while (this.clock.now() <= this.next) await sleep(this.next + 1 - this.clock.now());
      try {
        const { value, endedAt } = await request();
        this.next = endedAt + this.delayMs;
        return value;
      } catch (error) {
        this.next = this.clock.now() + this.delayMs;
        throw error;
      }
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }
}

/** The browser's network: trawl's fetcher (its SSRF guard, timeouts, body cap), in the host's turns. */
function gatedFetch(fetcher: PipelineDeps['fetcher'], turns: HostTurns, jobSignal: AbortSignal | undefined): RenderFetch {
  return (url, request) =>
    turns.take(async () => {
      const accept = request.headers.accept;
      const signal = jobSignal ? AbortSignal.any([jobSignal, request.signal]) : request.signal;
      const response = await fetcher.fetch(url, { signal, ...(accept ? { headers: { accept } } : {}) });
      return { value: toFetchedResponse(response), endedAt: response.endedAt };
    });
}

/**
 * The browser's network by host: the page's own host in its turns (`own`), another host through a
 * borrow of its gate (see other-hosts.ts), or refused when there is no frontier to borrow from.
 */
function routedFetch(deps: RenderStepDeps, policy: ResolvedPolicy, host: string, own: RenderFetch, holdMs: () => number, jobSignal: AbortSignal): RenderFetch {
  const { frontier } = deps;
  const other = frontier ? otherHostFetch({ ...deps, frontier }, policy, holdMs) : null;
  return async (url, request) => {
    if (hostOrNull(url) === host) return own(url, request);
    if (other === null) throw new RequestRefused('other-host: no host gate to borrow');
    return toFetchedResponse(await other(url, { ...request, signal: AbortSignal.any([jobSignal, request.signal]) }));
  };
}

/**
 * Refuses what robots.txt (as cached) disallows on the page's own host. Another host's requests
 * are let through to `routedFetch`, which borrows that host's gate (a redirect's hop to another
 * host goes there too, past this hook); the renderer's policy has already refused them unless
 * other hosts are allowed.
 */
function underThisGate(deps: Pick<PipelineDeps, 'robots' | 'clock'>, policy: ResolvedPolicy, host: string): BeforeRequest {
  return async (url) => {
    if (hostOrNull(url) !== host) return { allow: true };
    const [refusal] = await cachedRefusals({ cache: deps.robots, now: () => deps.clock.now() }, policy, [url]);
    return refusal ? { allow: false, reason: `robots: ${refusal.reason}` } : { allow: true };
  };
}

const hostOrNull = (url: string): string | null => {
  try {
    return hostOf(url);
  } catch {
    return null;
  }
};

/** Headers the browser must not see from a decoded body (its length and encoding are the fetcher's). */
const HOP_HEADERS = new Set(['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/** A fetch result as the renderer takes it: lower-case single-valued headers, the decoded body. */
export function toFetchedResponse(response: FetchResult): FetchedResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_HEADERS.has(lower)) continue;
    headers[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  return { status: response.status, headers, body: response.body };
}
