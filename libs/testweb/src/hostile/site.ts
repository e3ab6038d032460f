/**
 * The machinery of a hostile host: a route table keyed by the server's request key, small HTML
 * and redirect helpers, and writers that honour back-pressure so a client that stops reading
 * stops the server too (what the log's `bytes` then says is what really went to the socket).
 */
import type http from 'node:http';
import type { HostHandler, HostHandlerContext } from '../options.js';
import { NOT_FOUND_BODY } from '../render.js';
import { requestKey } from '../request-key.js';

export { streamBody } from '../stream.js';

export const HTML = 'text/html; charset=utf-8';
export const TEXT = 'text/plain; charset=utf-8';

export type Route = (req: http.IncomingMessage, res: http.ServerResponse, ctx: HostHandlerContext) => void | Promise<void>;

export interface HostileSite {
  /** Request key (see requestKey) → route. */
  routes: ReadonlyMap<string, Route>;
  /** Routes computed from the key (the calendar's endless days); null = 404. */
  dynamic?: (key: string) => Route | null;
}

/** Sends a whole body with Content-Length; HEAD gets the headers only. */
export function sendBody(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  status: number,
  headers: http.OutgoingHttpHeaders,
  body: string | Buffer,
): void {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  res.writeHead(status, { ...headers, 'content-length': bytes.byteLength });
  if (req.method === 'HEAD') res.end();
  else res.end(bytes);
}

/** A fixed response. */
export function staticRoute(status: number, headers: http.OutgoingHttpHeaders, body: string | Buffer): Route {
  return (req, res) => sendBody(req, res, status, headers, body);
}

export function htmlRoute(html: string | Buffer, headers: http.OutgoingHttpHeaders = { 'content-type': HTML }): Route {
  return staticRoute(200, headers, html);
}

/** A redirect; `location` is sent as given (absolute, root-relative or relative). */
export function redirectRoute(status: number, location: string): Route {
  return staticRoute(status, { 'content-type': HTML, location }, `<!doctype html>\n<p>Moved to <a href="${escapeHtml(location)}">here</a>.</p>\n`);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'));
}

/** A small UTF-8 page: title, optional extra head markup, one list item per link. */
export function htmlDoc(title: string, links: readonly string[], options: { head?: string; text?: string } = {}): string {
  const items = links.map((href) => `<li><a href="${escapeHtml(href)}">${escapeHtml(href)}</a></li>`).join('\n');
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>${options.head ?? ''}</head>\n` +
    `<body>\n<h1>${escapeHtml(title)}</h1>\n${options.text === undefined ? '' : `<p>${escapeHtml(options.text)}</p>\n`}<ul>\n${items}\n</ul>\n</body>\n</html>\n`
  );
}

/**
 * The host handler of a site. The site is looked up per request because hostile sites are built
 * once the web has bound its port (their redirects name other origins).
 */
export function siteHandler(site: () => HostileSite | undefined): HostHandler {
  return (req, res, ctx) => {
    const current = site();
    if (current === undefined) {
      sendBody(req, res, 503, { 'content-type': TEXT }, 'starting\n');
      return;
    }
    const key = requestKey(req.url ?? '');
    const route = key === null ? null : (current.routes.get(key) ?? current.dynamic?.(key) ?? null);
    ctx.log({ pageKey: route === null ? null : key });
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      sendBody(req, res, 405, { 'content-type': TEXT }, 'method not allowed\n');
      return;
    }
    if (route === null) {
      sendBody(req, res, 404, { 'content-type': HTML }, NOT_FOUND_BODY);
      return;
    }
    return route(req, res, ctx);
  };
}

/** Resolves after `ms`, or earlier when the response closes or the web stops. */
export function pause(ms: number, res: http.ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    res.on('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Resolves only when the response closes (the client left) or the web stops: a server that never answers. */
export function hang(res: http.ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    if (res.destroyed || signal.aborted) return resolve();
    res.on('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
