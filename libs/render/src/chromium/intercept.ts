import type { Route } from 'playwright-core';
import { cacheable, refusedBy, type RequestPolicySettings } from '../policy.js';
import type { FetchedResponse, RenderOptions, SubrequestRecord } from '../types.js';

/** Headers that describe the wire, not the body handed to the browser (already decoded, whole). */
const WIRE_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive']);

class Refused extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

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

  constructor(
    private readonly pageUrl: URL,
    private readonly policy: RequestPolicySettings,
    private readonly options: RenderOptions,
    private readonly signal: AbortSignal,
  ) {}

  /** The record of the top-level document, once it was requested. */
  documentRecord(): SubrequestRecord | undefined {
    return this.requests.find((record) => record.resourceType === 'document');
  }

  readonly handle = async (route: Route): Promise<void> => {
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
      if (refused !== null) throw new Refused(refused);
      const { document } = this.options;
      if (document !== undefined && !this.documentSupplied && request.isNavigationRequest() && url === this.pageUrl.href) {
        this.documentSupplied = true;
        await this.fulfill(route, record, 'supplied', document, resourceType);
        return;
      }
      if (this.options.beforeRequest !== undefined) {
        const decision = await this.options.beforeRequest(url, resourceType);
        if (!decision.allow) throw new Refused(decision.reason);
        if (decision.body !== undefined) {
          await this.fulfill(route, record, 'supplied', decision.body, resourceType);
          return;
        }
      }
      const load = async (): Promise<FetchedResponse> => {
        const ssrf = this.options.ssrfCheck === undefined ? null : await this.options.ssrfCheck(new URL(url));
        if (ssrf !== null) throw new Refused(ssrf);
        this.signal.throwIfAborted();
        return this.options.fetch(url, { resourceType, method: request.method(), headers: request.headers(), signal: this.signal });
      };
      const { cache } = this.options;
      if (cache !== undefined && this.policy.cacheResourceTypes.includes(resourceType)) {
        const { response, hit } = await cache.getOrLoad(url, load, (r) => cacheable(this.policy, resourceType, r.status, r.headers));
        await this.fulfill(route, record, hit ? 'cached' : 'fetched', response, resourceType);
      } else await this.fulfill(route, record, 'fetched', await load(), resourceType);
    } catch (error) {
      if (error instanceof Refused) {
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

function describe(error: unknown): string {
  if (error instanceof Error) return (error as { code?: string }).code ?? error.message;
  return String(error);
}
