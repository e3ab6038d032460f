import type { Request, Route } from 'playwright-core';
import { RequestRefused } from '../errors.js';
import { cacheable, refusedBy, type RequestPolicySettings } from '../policy.js';
import type { FetchedResponse, RenderOptions, SubrequestRecord } from '../types.js';

/** Redirects a page's subresource may take, each hop checked like a request of its own. */
const MAX_SUBRESOURCE_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Headers that describe the wire, not the body handed to the browser (already decoded, whole). */
const WIRE_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive']);


/**
 * One page's request hook: every request the browser makes comes here (page.route('**\/*')), and
 * is either refused (route.abort) or answered (route.fulfill) from the supplied document, the
 * caller's `beforeRequest`, the subresource cache or the caller's fetch. Nothing is continued to
 * the network. Also counts requests in flight, for the render's idle wait.
 */
export class PageInterceptor {
  readonly requests: SubrequestRecord[] = [];
  inFlight = 0;
  lastActivity = performance.now();
  private documentSupplied = false;
  private closed = false;
  /** Where the top-level document redirected to: the renderer navigates there itself. */
  private redirect: string | null = null;

  constructor(
    private readonly pageUrl: URL,
    private readonly policy: RequestPolicySettings,
    private readonly options: RenderOptions,
    private readonly signal: AbortSignal,
  ) {}

  /** The record of the last top-level document requested. */
  documentRecord(): SubrequestRecord | undefined {
    return this.requests.findLast((record) => record.resourceType === 'document');
  }

  /** The redirect the last top-level document answered with, once. */
  takeRedirect(): string | null {
    const redirect = this.redirect;
    this.redirect = null;
    return redirect;
  }

  /** The render is over: refuse whatever the page still asks for (it is being blanked or closed). */
  close(): void {
    this.closed = true;
  }

  readonly handle = async (route: Route): Promise<void> => {
    if (this.closed) {
      await route.abort('blockedbyclient').catch(() => undefined);
      return;
    }
    const request = route.request();
    const url = request.url();
    const resourceType = request.resourceType();
    const record: SubrequestRecord = { url, resourceType, outcome: 'blocked' };
    const made = this.requests.length;
    this.requests.push(record);
    this.inFlight++;
    this.lastActivity = performance.now();
    try {
      const refused = refusedBy(this.policy, { url, resourceType, method: request.method(), pageHost: this.pageUrl.host, made });
      if (refused !== null) throw new RequestRefused(refused);
      const { document } = this.options;
      if (document !== undefined && !this.documentSupplied && request.isNavigationRequest() && url === withoutFragment(this.pageUrl)) {
        this.documentSupplied = true;
        await this.fulfill(route, record, 'supplied', document, resourceType);
        return;
      }
      if (this.options.beforeRequest !== undefined) {
        const decision = await this.options.beforeRequest(url, resourceType);
        if (!decision.allow) throw new RequestRefused(decision.reason);
        if (decision.body !== undefined) {
          await this.fulfill(route, record, 'supplied', decision.body, resourceType);
          return;
        }
      }
      // A top-level document's redirect goes back to the renderer, which navigates to it (a
      // redirect fulfilled here would be followed by the browser past this hook); a subresource's
      // is followed here, each hop through the policy and the SSRF check again.
      const topLevel = request.isNavigationRequest() && isMainFrame(request);
      const load = async (): Promise<FetchedResponse> => {
        let target = url;
        for (let hop = 0; ; hop++) {
          const ssrf = this.options.ssrfCheck === undefined ? null : await this.options.ssrfCheck(new URL(target));
          if (ssrf !== null) throw new RequestRefused(ssrf);
          this.signal.throwIfAborted();
          const response = await this.options.fetch(target, { resourceType, method: request.method(), headers: request.headers(), signal: this.signal });
          const location = redirectTarget(response, target);
          if (location === null || topLevel) return response;
          if (hop >= MAX_SUBRESOURCE_REDIRECTS) throw new RequestRefused('too-many-redirects');
          const refusedHop = refusedBy(this.policy, { url: location, resourceType, method: request.method(), pageHost: this.pageUrl.host, made });
          if (refusedHop !== null) throw new RequestRefused(`redirect:${refusedHop}`);
          target = location;
        }
      };
      const { cache } = this.options;
      if (cache !== undefined && this.policy.cacheResourceTypes.includes(resourceType)) {
        const { response, hit } = await cache.getOrLoad(url, load, (r) => cacheable(this.policy, resourceType, r.status, r.headers));
        await this.fulfill(route, record, hit ? 'cached' : 'fetched', response, resourceType);
      } else await this.fulfill(route, record, 'fetched', await load(), resourceType);
    } catch (error) {
      if (error instanceof RequestRefused) {
        record.outcome = 'blocked';
        record.reason = error.reason;
        await route.abort('blockedbyclient').catch(() => undefined);
      } else {
        record.outcome = 'failed';
        record.reason = this.signal.aborted ? 'render-ended' : describe(error);
        await route.abort('failed').catch(() => undefined);
      }
    } finally {
      this.inFlight--;
      this.lastActivity = performance.now();
    }
  };

  private async fulfill(route: Route, record: SubrequestRecord, outcome: SubrequestRecord['outcome'], response: FetchedResponse, resourceType: string): Promise<void> {
    const location = redirectTarget(response, record.url);
    if (location !== null) {
      // Only a top-level document gets here with a redirect (see load): the renderer follows it.
      record.outcome = outcome;
      record.status = response.status;
      record.location = location;
      this.redirect = location;
      await route.abort('aborted').catch(() => undefined);
      return;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers)) if (!WIRE_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
    if (resourceType === 'document' && headers['content-type'] === undefined) headers['content-type'] = 'text/html';
    record.outcome = outcome;
    record.status = response.status;
    record.bytes = response.body.length;
    // Fails only when the page is already gone (the render ended): nothing left to tell.
    await route.fulfill({ status: response.status, headers, body: response.body }).catch(() => undefined);
  }
}

/** The URL as the browser requests it: the fragment stays in the page. */
function withoutFragment(url: URL): string {
  return url.hash === '' ? url.href : url.href.slice(0, -url.hash.length);
}

function isMainFrame(request: Request): boolean {
  try {
    return request.frame().parentFrame() === null;
  } catch {
    return false; // a request without a frame (a worker's): never the page's document
  }
}

function redirectTarget(response: FetchedResponse, base: string): string | null {
  const location = response.headers['location'];
  if (!REDIRECT_STATUSES.has(response.status) || location === undefined) return null;
  try {
    return new URL(location, base).href;
  } catch {
    return null;
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return (error as { code?: string }).code ?? error.message;
  return String(error);
}
