import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FetchedResponse, RenderFetch } from '../types.js';

/**
 * A small single-page-app site on loopback, for the renderer's tests and its measurement:
 *
 * - `/spa/<n>`: a shell (empty `#root`, the bundle, a logo, a script from another host);
 * - `/static/app.js`: reads `<n>` from the path, fetches `/data/<n>.json`, writes its links into `#root`;
 * - `/data/<n>.json`: `{ title, links: ['/spa/<n+1>', '/item/<n>-1', '/item/<n>-2'] }`;
 * - `/static/logo.png`: a 1×1 PNG (a renderer should never ask for it);
 * - `/slow`: a shell whose `/static/hang.js` never answers;
 * - `/hybrid`: server-rendered text and links, plus an inline script adding three more;
 * - `/old/<n>`: 301 to `/spa/<n>`;
 * - `/go/<n>`: a script that sends the browser on to `/spa/<n>` (location.replace).
 *
 * Every request is logged (`log`), so tests can say what reached the server.
 */
export interface SpaSite {
  origin: string;
  log: string[];
  url(path: string): string;
  close(): Promise<void>;
}

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

const APP_JS = `(async () => {
  const n = Number(location.pathname.split('/').pop());
  const data = await (await fetch('/data/' + n + '.json')).json();
  const root = document.getElementById('root');
  const h1 = document.createElement('h1');
  h1.textContent = data.title;
  root.append(h1);
  const list = document.createElement('ul');
  for (const href of data.links) {
    const a = document.createElement('a');
    a.href = href;
    a.textContent = href;
    const li = document.createElement('li');
    li.append(a);
    list.append(li);
  }
  root.append(list);
})();`;

const shell = (title: string, script: string): string => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>
<script src="http://cdn.elsewhere.test/lib.js"></script></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
<img src="/static/logo.png" alt=""><script src="${script}"></script></body></html>`;

const HYBRID = `<!doctype html><html><head><title>Hybrid</title></head><body><nav><a href="/">Home</a> <a href="/spa/1">App</a></nav>
<article><h1>Server-rendered</h1><p>${'Words that were on the page before any script ran. '.repeat(12)}</p></article><ul id="more"></ul>
<script>document.getElementById('more').innerHTML = ['/item/a', '/item/b', '/item/c'].map((p) => '<li><a href="' + p + '">' + p + '</a></li>').join('');</script>
</body></html>`;

export async function startSpaSite(): Promise<SpaSite> {
  const log: string[] = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = request.url ?? '/';
    log.push(path);
    const send = (status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}): void => {
      response.writeHead(status, { 'content-type': type, ...headers }).end(body);
    };
    let match: RegExpExecArray | null;
    if ((match = /^\/spa\/(\d+)$/.exec(path)) !== null) send(200, 'text/html; charset=utf-8', shell(`App ${match[1]}`, '/static/app.js'));
    else if (path === '/static/app.js') send(200, 'application/javascript', APP_JS, { 'cache-control': 'max-age=3600' });
    else if ((match = /^\/data\/(\d+)\.json$/.exec(path)) !== null) {
      const n = Number(match[1]);
      send(200, 'application/json', JSON.stringify({ title: `Item list ${n}`, links: [`/spa/${n + 1}`, `/item/${n}-1`, `/item/${n}-2`] }));
    } else if (path === '/static/logo.png') send(200, 'image/png', PNG);
    else if (path === '/slow') send(200, 'text/html; charset=utf-8', shell('Slow', '/static/hang.js'));
    else if (path === '/static/hang.js') {
      hanging.add(response);
      response.on('close', () => hanging.delete(response));
    } else if (path === '/hybrid') send(200, 'text/html; charset=utf-8', HYBRID);
    else if ((match = /^\/go\/(\d+)$/.exec(path)) !== null) send(200, 'text/html; charset=utf-8', `<!doctype html><title>Go</title><script>location.replace('/spa/${match[1]}' + location.hash)</script>`);
    else if ((match = /^\/old\/(\d+)$/.exec(path)) !== null) send(301, 'text/plain', 'moved', { location: `/spa/${match[1]}` });
    else send(404, 'text/plain', 'not found');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  return {
    origin,
    log,
    url: (path) => `${origin}${path}`,
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}

/**
 * A RenderFetch over node's fetch, standing in for the crawler's fetcher in tests: no redirects
 * followed (the browser follows them, through the hook again), the body decoded.
 */
export const plainFetch: RenderFetch = async (url, request) => {
  const response = await fetch(url, { redirect: 'manual', signal: request.signal, headers: { accept: request.headers['accept'] ?? '*/*' } });
  return toFetched(response);
};

export async function toFetched(response: Response): Promise<FetchedResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'content-encoding' && name !== 'content-length') headers[name] = value;
  });
  return { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) };
}
