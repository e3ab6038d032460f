/** The default responses of the synthetic web, and the byte counting every response gets. */
import type http from 'node:http';
import type { RequestLogEntry } from './log.js';
import type { Resource, WebModel } from './model.js';
import type { OriginOf } from './render.js';
import { NOT_FOUND_BODY, renderNofollowPage, renderPage } from './render.js';

const HTML = 'text/html; charset=utf-8';
const TEXT = 'text/plain; charset=utf-8';

export const DEFAULT_ROBOTS_TXT = 'User-agent: *\nAllow: /\n';

/** Counts body bytes as they are handed to the response, whoever writes them. */
export function countBodyBytes(res: http.ServerResponse, entry: RequestLogEntry): void {
  const count = (chunk: unknown, encoding: unknown): void => {
    if (typeof chunk === 'string') {
      entry.bytes += Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    } else if (chunk instanceof Uint8Array) {
      entry.bytes += chunk.byteLength;
    }
  };
  const write = res.write as (...args: unknown[]) => boolean;
  const end = res.end as (...args: unknown[]) => http.ServerResponse;
  res.write = function (this: http.ServerResponse, ...args: unknown[]) {
    count(args[0], args[1]);
    return write.apply(this, args);
  } as typeof res.write;
  res.end = function (this: http.ServerResponse, ...args: unknown[]) {
    if (typeof args[0] !== 'function') count(args[0], args[1]);
    return end.apply(this, args);
  } as typeof res.end;
}

export function send(req: http.IncomingMessage, res: http.ServerResponse, status: number, type: string, body: string): void {
  const bytes = Buffer.from(body, 'utf8');
  res.writeHead(status, { 'content-type': type, 'content-length': bytes.byteLength });
  if (req.method === 'HEAD') res.end();
  else res.end(bytes);
}

/** Everything the default responder needs to know about the web. */
export interface DefaultSite {
  model: WebModel;
  pageBytes: number;
  robotsTxt: (hostIndex: number) => string | null;
  originOf: OriginOf;
}

/** The synthetic web's own answer: a page, a nofollow target, robots.txt, 404 or 405. */
export function serveDefault(
  site: DefaultSite,
  hostIndex: number,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  resource: Resource | null,
): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    send(req, res, 405, TEXT, 'method not allowed\n');
    return;
  }
  if (resource === null) {
    send(req, res, 404, HTML, NOT_FOUND_BODY);
    return;
  }
  switch (resource.kind) {
    case 'robots': {
      const body = site.robotsTxt(hostIndex);
      if (body === null) send(req, res, 404, TEXT, 'no robots.txt\n');
      else send(req, res, 200, TEXT, body);
      return;
    }
    case 'nofollow':
      send(req, res, 200, HTML, renderNofollowPage(hostIndex, resource.id));
      return;
    case 'page':
      send(req, res, 200, HTML, renderPage(site.model, hostIndex, resource.page, site.originOf, site.pageBytes));
      return;
  }
}

/** A handler failed: 500 if nothing was sent yet, otherwise cut the connection. */
export function failResponse(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (!res.headersSent) send(req, res, 500, TEXT, 'handler failed\n');
  else res.destroy();
}
