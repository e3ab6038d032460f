import { setTimeout as sleep } from 'node:timers/promises';
import type { Page, Response } from 'playwright-core';
import { isTrawlError, type TrawlError } from '@trawl/core';
import { RenderErrorCode, renderError } from '../errors.js';
import { DEFAULT_REQUEST_POLICY, type RequestPolicySettings } from '../policy.js';
import type { Renderer, RenderOptions, RenderResult, RenderTimings, SubrequestRecord } from '../types.js';
import { PageInterceptor } from './intercept.js';
import { BrowserPool, type BrowserPoolOptions, PoolClosedError, type PoolStats } from './pool.js';

export interface ChromiumRendererOptions {
  pool?: Partial<BrowserPoolOptions>;
  policy?: Partial<RequestPolicySettings>;
  /** A page that has not settled this long after it opened ends with ERR_RENDER_TIMEOUT (the wait for a page slot is not counted). */
  timeoutMs?: number;
  /** After the load event, the page is settled once no request has been in flight for this long. */
  idleMs?: number;
  /** Redirects of the top-level document followed (each one a navigation through the hook; other hosts are refused by the policy). */
  maxRedirects?: number;
}

export const DEFAULT_RENDER_TIMEOUT_MS = 15_000;
export const DEFAULT_RENDER_IDLE_MS = 100;

/**
 * The Renderer on headless Chromium. Each render borrows a page from the pool, routes every request
 * through a PageInterceptor, navigates, waits for the load event and then for the network to go
 * quiet, and serializes the DOM. Whatever goes wrong comes back as `{ ok: false, error }`.
 */
export class ChromiumRenderer implements Renderer {
  readonly pool: BrowserPool;
  private readonly policy: RequestPolicySettings;
  private readonly timeoutMs: number;
  private readonly idleMs: number;
  private readonly maxRedirects: number;

  constructor(options: ChromiumRendererOptions = {}) {
    this.pool = new BrowserPool(options.pool);
    this.policy = { ...DEFAULT_REQUEST_POLICY, ...options.policy };
    this.timeoutMs = options.timeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS;
    this.idleMs = options.idleMs ?? DEFAULT_RENDER_IDLE_MS;
    this.maxRedirects = options.maxRedirects ?? 5;
  }

  stats(): PoolStats {
    return this.pool.stats();
  }

  async render(url: string, options: RenderOptions): Promise<RenderResult> {
    const started = performance.now();
    let pageUrl: URL;
    try {
      pageUrl = new URL(url);
    } catch (cause) {
      return failure(url, renderError(RenderErrorCode.Document, `not a URL: ${url}`, { cause }), [], { queuedMs: 0, openMs: 0, renderMs: 0, totalMs: performance.now() - started });
    }
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const ended = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const onCallerAbort = (): void => ended.abort(renderError(RenderErrorCode.Aborted, 'the render was aborted', { cause: options.signal?.reason }));
    if (options.signal?.aborted) onCallerAbort();
    else options.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const interceptor = new PageInterceptor(pageUrl, this.policy, options, ended.signal);
    let queuedMs = 0;
    let openMs = 0;
    let navigated = started;
    try {
      const lease = await this.pool.acquire(pageUrl.host, ended.signal);
      ({ queuedMs, openMs } = lease);
      navigated = performance.now();
      // The timeout is the page's own: the wait for a slot is bounded by the pages ahead of it
      // (each by its timeout) and by the caller's signal.
      timer = setTimeout(() => ended.abort(renderError(RenderErrorCode.Timeout, `the page did not settle within ${timeoutMs} ms`, { details: { url, timeoutMs } })), timeoutMs);
      let renderMs = 0;
      let outcome: Loaded;
      let clean = false;
      try {
        const work = this.load(lease.page, pageUrl, interceptor, ended.signal);
        // A page stuck in a script or a fetch does not answer; the lease's release closes it.
        work.catch(() => undefined);
        outcome = await Promise.race([work, aborted(ended.signal)]);
        renderMs = performance.now() - navigated;
        clean = true;
      } finally {
        interceptor.close();
        ended.abort(renderError(RenderErrorCode.Aborted, 'the render ended'));
        // A page that timed out or failed may be stuck in a script: it is closed, never reused.
        await lease.release(clean);
      }
      return { ok: true, url, ...outcome, requests: interceptor.requests, timings: { queuedMs, openMs, renderMs, totalMs: performance.now() - started } };
    } catch (error) {
      const timings = { queuedMs, openMs, renderMs: performance.now() - navigated, totalMs: performance.now() - started };
      return failure(url, this.explain(error, interceptor), interceptor.requests, timings, interceptor.documentRecord()?.status ?? null);
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async load(page: Page, pageUrl: URL, interceptor: PageInterceptor, signal: AbortSignal): Promise<Loaded> {
    await page.route('**/*', interceptor.handle);
    let response: Response | null = null;
    for (let target = pageUrl.href, hops = 0; ; hops++) {
      try {
        response = await page.goto(target, { waitUntil: 'load', timeout: 0 });
        break;
      } catch (error) {
        const next = interceptor.takeRedirect();
        if (next === null) throw error;
        if (hops >= this.maxRedirects) throw renderError(RenderErrorCode.Document, `more than ${this.maxRedirects} redirects`, { details: { url: pageUrl.href, last: next } });
        target = next;
      }
    }
    // Scripts fetch around and after the load event (a SPA's data), and the browser may report a
    // request after the load event it started before: the page is settled once nothing has been
    // in flight for idleMs since the load, and a round trip through the page's event loop (after
    // which a request its scripts started is visible here) brings nothing new.
    interceptor.lastActivity = Math.max(interceptor.lastActivity, performance.now());
    for (;;) {
      while (!signal.aborted && (interceptor.inFlight > 0 || performance.now() - interceptor.lastActivity < this.idleMs)) await sleep(Math.max(10, this.idleMs / 4));
      signal.throwIfAborted();
      const seen = interceptor.requests.length;
      try {
        await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
      } catch {
        // A script navigated the page (location.replace to a language's home, say): wait for the
        // new document, through the hook like the first, and settle again.
        await page.waitForLoadState('load').catch(() => undefined);
        continue;
      }
      if (interceptor.requests.length === seen && interceptor.inFlight === 0) break;
    }
    const html = String(await page.evaluate(SERIALIZE_DOCUMENT));
    return { html, status: response?.status() ?? interceptor.documentRecord()?.status ?? 0, finalUrl: page.url() };
  }

  private explain(error: unknown, interceptor: PageInterceptor): TrawlError {
    if (isTrawlError(error)) return error;
    if (error instanceof PoolClosedError) return renderError(RenderErrorCode.Closed, error.message, { cause: error });
    const document = interceptor.documentRecord();
    if (document !== undefined && (document.outcome === 'blocked' || document.outcome === 'failed'))
      return renderError(RenderErrorCode.Document, `the document was ${document.outcome}: ${document.reason ?? 'unknown'}`, { cause: error, details: { reason: document.reason } });
    return renderError(RenderErrorCode.Browser, error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/**
 * The rendered document as markup: its doctype and the root element's outerHTML, what
 * `page.content()` returns. Evaluated in the page's own world: `page.content()` first injects
 * Playwright's selector engine (hundreds of KB of script) into every new page, which costs the
 * browser more than the serialization itself. A page's scripts could lie about their own DOM
 * this way, which they can do anyway.
 */
const SERIALIZE_DOCUMENT =
  '(document.doctype === null ? "" : new XMLSerializer().serializeToString(document.doctype)) + (document.documentElement ? document.documentElement.outerHTML : "")';

interface Loaded {
  html: string;
  status: number;
  finalUrl: string;
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function failure(url: string, error: TrawlError, requests: SubrequestRecord[], timings: RenderTimings, status: number | null = null): RenderResult {
  return { ok: false, url, finalUrl: url, error, status, requests, timings };
}
