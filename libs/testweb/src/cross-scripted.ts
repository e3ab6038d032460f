/**
 * Hosts whose pages need ANOTHER host's script, for tests of rendering with other hosts' gates:
 * served through `hostHandlers` on `extraHosts`, in pairs, each naming its partner's origin.
 *
 * Page p (`/`, `/p/1` … `/p/<n−1>`) links to p+1 with a plain `<a>` (so a crawl finds every page
 * without a browser) and loads `<partner>/static/links.js`, a script that adds one link only a
 * browser that ran it finds: `/x/<p>`, a page of the page's own host with no links or scripts.
 * Every host serves that script to any page, `Cache-Control: no-store` (so every page asks for it,
 * each time a turn of its host). Pages (and `/x/` pages) are logged as `resource: 'page'`, the
 * script as `resource: 'file'` with note `script`. robots.txt says `Crawl-delay`.
 */
import type http from 'node:http';
import type { HostHandler, HostHandlerContext } from './options.js';
import { scriptedPath } from './scripted.js';

export interface CrossScriptedHostOptions {
  /** Pages of the host (page 0 is `/`). */
  pages: number;
  /** robots.txt's Crawl-delay in seconds (absent: none). */
  crawlDelayS?: number;
  /** The origin whose `/static/links.js` every page loads (asked per request: known once the web has started). */
  partnerOrigin: () => string;
}

/** The path a page's partner script adds a link to (found only by running the script). */
export const scriptOnlyPath = (page: number): string => `/x/${page}`;

const LINKS_JS = `(() => {
  const match = /^\\/p\\/(\\d+)$/.exec(location.pathname);
  const more = document.getElementById('more');
  more.innerHTML = '<li><a href="/x/' + (match ? match[1] : '0') + '">More</a></li>';
})();`;

function page(p: number, pages: number, partner: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Cross ${p}</title></head>
<body><h1>Cross page ${p}</h1><p><a href="${scriptedPath((p + 1) % pages)}">Next page</a></p>
<ul id="more"></ul><script src="${partner}/static/links.js"></script></body></html>`;
}

/** Page p of the host from its path (null: not one of its linked pages). */
function pageOf(path: string, pages: number): number | null {
  if (path === '/') return 0;
  const match = /^\/p\/(\d+)$/.exec(path);
  const n = match ? Number(match[1]) : -1;
  return n >= 1 && n < pages ? n : null;
}

/** The handler that serves a host whose pages load its partner's script. */
export function crossScriptedHost(options: CrossScriptedHostOptions): HostHandler {
  const { pages } = options;
  return (req: http.IncomingMessage, res: http.ServerResponse, ctx: HostHandlerContext) => {
    const path = (req.url ?? '/').split('#')[0] as string;
    const send = (status: number, type: string, body: string, extra: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...extra });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (path === '/robots.txt') {
      ctx.log({ pageKey: path, resource: 'robots' });
      return send(200, 'text/plain', `User-agent: *\n${options.crawlDelayS === undefined ? '' : `Crawl-delay: ${options.crawlDelayS}\n`}Allow: /\n`);
    }
    if (path === '/static/links.js') {
      ctx.log({ pageKey: path, resource: 'file', note: 'script' });
      // Never kept by a subresource cache: every page that runs it asks its host for it again.
      return send(200, 'application/javascript', LINKS_JS, { 'cache-control': 'no-store' });
    }
    const main = pageOf(path, pages);
    if (main !== null) {
      ctx.log({ pageKey: path, resource: 'page' });
      return send(200, 'text/html; charset=utf-8', page(main, pages, options.partnerOrigin()));
    }
    const extra = /^\/x\/(\d+)$/.exec(path);
    if (extra && Number(extra[1]) < pages) {
      ctx.log({ pageKey: path, resource: 'page' });
      return send(200, 'text/html; charset=utf-8', '<!doctype html><html><head><title>Extra</title></head><body><p>Found by running a script.</p></body></html>');
    }
    ctx.log({ pageKey: null });
    send(404, 'text/plain', 'not found');
  };
}
