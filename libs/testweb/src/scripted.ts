/**
 * Hosts whose links are written by scripts, for rendering tests and benchmarks. Served through
 * `hostHandlers` on `extraHosts` (no link-table page links to them; seed their roots):
 *
 * - `spa`: every page (`/`, `/p/1` … `/p/<n−1>`) is the same shell, an empty `#root`, a
 *   stylesheet, a logo and `/static/app.js`; the script fetches `/data/<p>.json` and writes the
 *   page's title, text and links (to p+1 and one other page) into `#root`. Without a browser a
 *   crawler finds the root alone.
 * - `hybrid`: server-rendered pages with text; even pages link to p+1 with a plain `<a>`, odd pages
 *   only through an inline script that writes the link (every page carries a small inline
 *   analytics script too). Without a browser a crawler finds `/` and `/p/1`.
 *
 * Every request is logged: pages as `resource: 'page'`, scripts, styles, images and data as
 * `resource: 'file'` (left out of duplicates and coverage, counted in `files`), with `note` the
 * kind (`script`, `style`, `image`, `data`). robots.txt says `Crawl-delay` when asked to.
 */
import type http from 'node:http';
import type { HostHandler, HostHandlerContext } from './options.js';

export type ScriptedKind = 'spa' | 'hybrid';

export interface ScriptedHostOptions {
  /** Pages of the host (page 0 is `/`). */
  pages: number;
  /** robots.txt's Crawl-delay in seconds (absent: none). */
  crawlDelayS?: number;
}

export const SCRIPTED_KINDS: readonly ScriptedKind[] = ['spa', 'hybrid'];

/** Page p's path on a scripted host. */
export const scriptedPath = (page: number): string => (page === 0 ? '/' : `/p/${page}`);

/** The pages a crawl of the host must find (absolute URLs): every one, since p links to p+1. */
export function scriptedPageUrls(origin: string, options: Pick<ScriptedHostOptions, 'pages'>): string[] {
  return Array.from({ length: options.pages }, (_, p) => `${origin}${scriptedPath(p)}`);
}

/** Whether page p shows links only a browser finds (the ground truth a render decision is judged by). */
export const scriptedNeedsRender = (kind: ScriptedKind, page: number): boolean => kind === 'spa' || page % 2 === 1;

/** The pages page p links to: p+1 (the last page links to the root), then one more for a SPA. */
function linksOf(kind: ScriptedKind, page: number, pages: number): number[] {
  const next = (page + 1) % pages;
  return kind === 'spa' ? [...new Set([next, (page * 7 + 3) % pages])] : [next];
}

const PROSE = 'This page was written by the synthetic web for crawlers that render scripts. ';

const APP_JS = `(async () => {
  const match = /^\\/p\\/(\\d+)$/.exec(location.pathname);
  const data = await (await fetch('/data/' + (match ? match[1] : '0') + '.json')).json();
  const root = document.getElementById('root');
  const items = data.links.map((href) => '<li><a href="' + href + '">' + href + '</a></li>');
  root.innerHTML = '<h1></h1><p></p><ul>' + items.join('') + '</ul>';
  root.querySelector('h1').textContent = data.title;
  root.querySelector('p').textContent = data.text;
})();`;

const APP_CSS = 'body { font-family: sans-serif; } #root { margin: 2em; }';
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');
const ANALYTICS = '<script>window.dataLayer = window.dataLayer || []; window.dataLayer.push({ event: "view" });</script>';

const spaShell = (page: number): string => `<!doctype html><html><head><meta charset="utf-8"><title>App ${page}</title>
<link rel="stylesheet" href="/static/app.css"></head>
<body><div id="root"></div><img src="/static/logo.png" alt=""><script src="/static/app.js"></script></body></html>`;

function hybridPage(page: number, pages: number): string {
  const [next] = linksOf('hybrid', page, pages) as [number];
  const link = page % 2 === 0
    ? `<p><a href="${scriptedPath(next)}">Next page</a></p>`
    : `<ul id="more"></ul><script>document.getElementById('more').innerHTML = '<li><a href="${scriptedPath(next)}">Next page</a></li>';</script>`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>Hybrid ${page}</title>${ANALYTICS}</head>
<body><article><h1>Hybrid page ${page}</h1><p>${PROSE.repeat(6)}</p></article>${link}</body></html>`;
}

/** Page p of a scripted host from its path (null: not a page). */
function pageOf(path: string, pages: number): number | null {
  if (path === '/') return 0;
  const match = /^\/p\/(\d+)$/.exec(path);
  const page = match ? Number(match[1]) : -1;
  return page >= 1 && page < pages ? page : null;
}

/** The handler that serves a scripted host (give it to `hostHandlers` for an extra host). */
export function scriptedHost(kind: ScriptedKind, options: ScriptedHostOptions): HostHandler {
  const { pages } = options;
  return (req: http.IncomingMessage, res: http.ServerResponse, ctx: HostHandlerContext) => {
    const path = (req.url ?? '/').split('#')[0] as string;
    const send = (status: number, type: string, body: string | Buffer): void => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    const asset = (note: string, type: string, body: string | Buffer): void => {
      ctx.log({ pageKey: path, resource: 'file', note });
      send(200, type, body);
    };
    if (path === '/robots.txt') {
      ctx.log({ pageKey: path, resource: 'robots' });
      return send(200, 'text/plain', `User-agent: *\n${options.crawlDelayS === undefined ? '' : `Crawl-delay: ${options.crawlDelayS}\n`}Allow: /\n`);
    }
    const page = pageOf(path, pages);
    if (page !== null) {
      ctx.log({ pageKey: path, resource: 'page' });
      return send(200, 'text/html; charset=utf-8', kind === 'spa' ? spaShell(page) : hybridPage(page, pages));
    }
    if (kind === 'spa') {
      const data = /^\/data\/(\d+)\.json$/.exec(path);
      const n = data ? Number(data[1]) : -1;
      if (n >= 0 && n < pages) {
        const body = { title: `App page ${n}`, text: PROSE.repeat(4), links: linksOf('spa', n, pages).map(scriptedPath) };
        return asset('data', 'application/json', JSON.stringify(body));
      }
      if (path === '/static/app.js') return asset('script', 'application/javascript', APP_JS);
      if (path === '/static/app.css') return asset('style', 'text/css', APP_CSS);
      if (path === '/static/logo.png') return asset('image', 'image/png', PNG);
    }
    ctx.log({ pageKey: null });
    send(404, 'text/plain', 'not found');
  };
}
