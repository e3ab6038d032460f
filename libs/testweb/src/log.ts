/** What the default web served at a request: a page, a duplicate variant, a file, a sitemap, … */
export type ResourceKind = 'page' | 'nofollow' | 'robots' | 'variant' | 'file' | 'sitemap' | 'script';

/** One request as the synthetic web saw it. Times are epoch milliseconds. */
export interface RequestLogEntry {
  /** `127.1.0.7:PORT`: the address and port the crawler connected to. */
  host: string;
  hostIndex: number;
  method: string;
  /** Raw request target (path and query) as received. */
  path: string;
  /**
   * The synthetic web's own canonical identity of what was requested (`/p/3`, `/`,
   * `/q?a=3&b=42`, `/robots.txt`, `/nofollow/3`); null when nothing lives at that path.
   */
  pageKey: string | null;
  /** Date.now() when the request arrived. */
  start: number;
  /** performance.timeOrigin + performance.now() at arrival: sub-millisecond and monotonic. */
  startHr?: number;
  /** When the response finished ('finish', or 'close' if the connection went first); -1 while in flight. */
  end: number;
  /** High-resolution counterpart of `end`; -1 while in flight. */
  endHr?: number;
  /** Response status; 0 while in flight, or when the connection closed before any header was sent. */
  status: number;
  /** Body bytes written (headers excluded). */
  bytes: number;
  userAgent: string | undefined;
  /** The connection closed before the response finished (client gave up, or stop()). */
  aborted?: boolean;
  /**
   * Epoch ms before which the server asked not to get another request from this client: set by
   * a handler that sent Retry-After (delta-seconds from the moment the headers went out, or the
   * HTTP-date itself), so Retry-After compliance is judged from what the server really said.
   */
  notBefore?: number;
  /** Free text from a host handler (ctx.log({ note })) or the server (a handler that threw). */
  note?: string;
  /** What the default web has at this request key (unset when nothing, or on a handler-only host). */
  resource?: ResourceKind;
  /** The request carried If-None-Match or If-Modified-Since. */
  conditional?: boolean;
  /** A conditional request to a page or variant with validators on: true when it was answered 304 Not Modified. */
  notModified?: boolean;
  /** The version of the page (or variant's page) the response was for (see the changing web). */
  version?: number;
}
