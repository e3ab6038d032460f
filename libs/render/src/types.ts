import type { TrawlError } from '@trawl/core';

/**
 * The port the crawl pipeline renders through. Nothing here loads a browser: the pipeline imports
 * `@trawl/render` for these types and the classifier, and only the composition root imports
 * `@trawl/render/chromium` to build the implementation.
 */
export interface Renderer {
  /** Never rejects for a page's fault (timeout, crash, refused document): see `RenderResult.ok`. */
  render(url: string, options: RenderOptions): Promise<RenderResult>;
  /** Waits for the renders under way, then closes every browser. Renders after it fail with ERR_RENDER_CLOSED. */
  close(): Promise<void>;
}

/** What a fetch returned: the caller's fetcher (got, behind the host gate and the SSRF guard) produces it. */
export interface FetchedResponse {
  status: number;
  /** Lower-case names. Content-Encoding must describe `body` as given (a decoded body has none). */
  headers: Readonly<Record<string, string>>;
  body: Buffer;
}

/** The browser's name for what a request is for (Playwright's `resourceType()`). */
export type ResourceType =
  | 'document'
  | 'stylesheet'
  | 'image'
  | 'media'
  | 'font'
  | 'script'
  | 'texttrack'
  | 'xhr'
  | 'fetch'
  | 'eventsource'
  | 'websocket'
  | 'manifest'
  | 'other'
  | (string & {});

export interface SubrequestInfo {
  resourceType: ResourceType;
  method: string;
  /** The headers the page would have sent (lower-case), for the fetcher to pick from (Accept, Referer). */
  headers: Readonly<Record<string, string>>;
  /** Aborts when the render ends (timeout, close): stop fetching. */
  signal: AbortSignal;
}

/**
 * The network, supplied by the caller: every request the browser makes that the policy allows is
 * fetched here and handed to the browser with `route.fulfill`; the browser never connects to
 * anything itself. Reject to fail the request (the page sees a network error).
 */
export type RenderFetch = (url: string, request: SubrequestInfo) => Promise<FetchedResponse>;

export type RequestDecision = { allow: true; body?: FetchedResponse } | { allow: false; reason: string };

/** The caller's say over each request, after the lib's own policy: refuse it, let it be fetched, or answer it (`body`). */
export type BeforeRequest = (url: string, resourceType: ResourceType) => Promise<RequestDecision>;

/** Null when the crawler may connect to the URL's host, else why not. Asked before each fetch. */
export type SsrfCheck = (url: URL) => Promise<string | null>;

/**
 * Subresources shared between the renders of one crawl: a site's app.js is fetched once, then
 * handed to every page from here. Concurrent loads of one URL must share one `load`.
 */
export interface SubresourceCache {
  getOrLoad(url: string, load: () => Promise<FetchedResponse>, keep: (response: FetchedResponse) => boolean): Promise<{ response: FetchedResponse; hit: boolean }>;
}

export interface RenderOptions {
  fetch: RenderFetch;
  /** The top-level document as already fetched over HTTP, so the page is not fetched twice. */
  document?: FetchedResponse;
  beforeRequest?: BeforeRequest;
  ssrfCheck?: SsrfCheck;
  cache?: SubresourceCache;
  /** Overrides the renderer's `timeoutMs` for this page. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type RequestOutcome = 'fetched' | 'cached' | 'supplied' | 'blocked' | 'failed';

/** One request the page made, in the order the browser made them (the document first). */
export interface SubrequestRecord {
  url: string;
  resourceType: ResourceType;
  /**
   * fetched: through the caller's fetch; cached: from the subresource cache; supplied: the body came
   * from the caller (`document`, `beforeRequest`); blocked: refused before any fetch (`reason`);
   * failed: the fetch rejected (`reason`).
   */
  outcome: RequestOutcome;
  reason?: string;
  status?: number;
  /** A top-level document's redirect target (the renderer navigates there next). */
  location?: string;
  bytes?: number;
}

export interface RenderTimings {
  /** Waiting for a page slot (the cap on open pages). */
  queuedMs: number;
  /** Opening a page (a fresh browser context with it, and a browser's launch for its first page). */
  openMs: number;
  /** From the navigation to the DOM being read. */
  renderMs: number;
  /** Until the result, the page's closing included. */
  totalMs: number;
}

interface RenderFacts {
  url: string;
  finalUrl: string;
  requests: SubrequestRecord[];
  timings: RenderTimings;
}

export type RenderResult =
  | (RenderFacts & { ok: true; html: string; status: number })
  | (RenderFacts & { ok: false; error: TrawlError; status: number | null });
