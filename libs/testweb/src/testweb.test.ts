import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeLog } from './analyze.js';
import { listenAll } from './listen.js';
import type { RequestLogEntry } from './log.js';
import { TestWeb } from './testweb.js';

interface Reply {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** A raw request: the path goes on the wire exactly as given (no client-side normalization). */
function request(origin: string, path: string, options: { method?: string; headers?: Record<string, string>; agent?: http.Agent } = {}): Promise<Reply> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: hostname, port, path, method: options.method ?? 'GET', headers: options.headers, agent: options.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The log entry of the last request, once its response has finished. */
async function lastEntry(web: TestWeb): Promise<RequestLogEntry> {
  await web.idle();
  const entry = web.log.at(-1);
  if (entry === undefined) throw new Error('empty log');
  return entry;
}

const unescapeHtml = (text: string): string => text.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** What a browser would see: the base href and the anchors (href, rel) in document order. */
function extract(html: string): { base: string | null; anchors: { href: string; rel: string | null }[] } {
  const base = /<base href="([^"]*)">/.exec(html)?.[1];
  const anchors = [...html.matchAll(/<a href="([^"]*)"(?: rel="([^"]*)")?>/g)].map((m) => ({
    href: unescapeHtml(m[1] as string),
    rel: m[2] ?? null,
  }));
  return { base: base === undefined ? null : unescapeHtml(base), anchors };
}

describe('TestWeb over loopback', () => {
  let web: TestWeb;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

  beforeAll(async () => {
    web = await TestWeb.start({ hosts: 3, pagesPerHost: 30, linksPerPage: 5, crossHostLinks: 2, seed: 9 });
  });
  afterAll(async () => {
    agent.destroy();
    await web.stop();
  });

  it('listens on consecutive loopback addresses with one port', () => {
    expect(web.port).toBeGreaterThan(0);
    expect(web.origins).toEqual([1, 2, 3].map((i) => `http://127.1.0.${i}:${web.port}`));
    expect(web.rootUrls()).toEqual(web.origins.map((o) => `${o}/`));
    expect(web.pageUrl(2, 0)).toBe(`${web.origins[2]}/`);
    expect(web.pageUrl(2, 4)).toBe(`${web.origins[2]}/p/4`);
    expect(web.pageUrl(2, 3)).toMatch(new RegExp(`^${web.origins[2]}/q\\?a=3&b=\\d+$`));
    expect(() => web.pageUrl(3, 0)).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_RANGE' }));
  });

  it('serves each page with the links of its link table, and every followable href reaches the linked page', async () => {
    const truth = web.groundTruth(web.rootUrls());
    let followed = 0;
    for (let host = 0; host < 3; host++) {
      for (let page = 0; page < 30; page++) {
        const pageUrl = new URL(web.pageUrl(host, page));
        const reply = await request(pageUrl.origin, pageUrl.pathname + pageUrl.search, { agent });
        expect(reply.status).toBe(200);
        expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(reply.body).toBe(web.html(host, page));
        const { base, anchors } = extract(reply.body);
        const links = web.links(host, page);
        expect(base).toBe(web.baseHref(host, page));
        expect(anchors).toEqual(links.map((l) => ({ href: l.href, rel: l.rel })));
        const baseUrl = new URL(base ?? pageUrl.href, pageUrl);
        for (const link of links) {
          if (link.url === null) continue;
          // Resolution as any HTML client does it; the server then has to collapse what is left
          // (escapes, tracking parameters, parameter order) to the same page.
          const target = new URL(link.href, baseUrl);
          const reply = await request(target.origin, target.pathname + target.search, { agent });
          const entry = await lastEntry(web);
          const canonical = new URL(link.url);
          expect(entry.host).toBe(canonical.host);
          expect(entry.pageKey, link.href).toBe(canonical.pathname + canonical.search);
          expect(reply.status).toBe(200);
          expect(truth.has(link.url)).toBe(link.follow);
          followed++;
        }
      }
    }
    expect(followed).toBeGreaterThan(500);
  });

  it('maps raw non-canonical request targets to the canonical pageKey', async () => {
    const query = new URL(web.pageUrl(1, 8));
    const [a, b] = [...query.searchParams.values()];
    const cases: [string, string][] = [
      ['/p/7', '/p/7'],
      ['/p/./7', '/p/7'],
      ['/x/../p/7', '/p/7'],
      ['/b/c/../../p/7', '/p/7'],
      ['/p/%37', '/p/7'],
      ['/%70/7', '/p/7'],
      ['/p/7?utm_source=x&utm_medium=y', '/p/7'],
      ['/p/7?fbclid=IwAR1', '/p/7'],
      ['/p/7?gclid=Cj0K2', '/p/7'],
      ['/./', '/'],
      ['/x/../', '/'],
      [`/q?b=${b}&a=${a}`, `/q?a=${a}&b=${b}`],
      [`/%71?a=${a}&utm_source=x&b=${b}`, `/q?a=${a}&b=${b}`],
      [`${web.origins[1]}/p/7`, '/p/7'],
      ['/nofollow/4', '/nofollow/4'],
    ];
    for (const [path, pageKey] of cases) {
      const reply = await request(web.origins[1] as string, path);
      const entry = await lastEntry(web);
      expect({ path: entry.path, pageKey: entry.pageKey, status: reply.status }).toEqual({ path, pageKey, status: 200 });
    }
  });

  it('answers 404 with pageKey null for unknown paths', async () => {
    for (const path of ['/nope', '/p/0', '/p/30', '/p/07', '/p/7/', '/p/7?x=1', '/q?a=8&b=0', '/nofollow/30', '/p//7']) {
      const reply = await request(web.origins[0] as string, path);
      const entry = await lastEntry(web);
      expect({ path, status: reply.status, pageKey: entry.pageKey }).toEqual({ path, status: 404, pageKey: null });
    }
  });

  it('logs method, status, body bytes, user agent and times', async () => {
    web.clearLog();
    const origin = web.origins[0] as string;
    const page = await request(origin, '/p/1', { headers: { 'user-agent': 'trawl-test/1.0' } });
    const head = await request(origin, '/p/1', { method: 'HEAD' });
    const post = await request(origin, '/p/1', { method: 'POST' });
    await web.idle();
    expect(head.body).toBe('');
    expect(post.headers.allow).toBe('GET, HEAD');
    const [get, headEntry, postEntry] = web.log;
    expect(web.log).toHaveLength(3);
    expect(get).toMatchObject({ method: 'GET', status: 200, bytes: Buffer.byteLength(page.body), userAgent: 'trawl-test/1.0', pageKey: '/p/1' });
    expect(headEntry).toMatchObject({ method: 'HEAD', status: 200, bytes: 0 });
    expect(postEntry).toMatchObject({ method: 'POST', status: 405 });
    for (const entry of web.log) {
      expect(entry.end).toBeGreaterThanOrEqual(entry.start);
      expect(entry.endHr).toBeGreaterThanOrEqual(entry.startHr as number);
      expect(Math.abs((entry.startHr as number) - entry.start)).toBeLessThan(50);
    }
  });

  it('computes the ground truth from the link table', () => {
    const all = new Set([0, 1, 2].flatMap((h) => Array.from({ length: 30 }, (_, p) => web.pageUrl(h, p))));
    expect(web.groundTruth(web.rootUrls())).toEqual(all);
    expect(web.groundTruth([web.rootUrls()[0] as string])).toEqual(all);
    const hostOnly = web.groundTruth([web.pageUrl(1, 0)], 'host');
    expect(hostOnly).toEqual(new Set(Array.from({ length: 30 }, (_, p) => web.pageUrl(1, p))));
    // A seed in a non-canonical form names the same page; unknown seeds name nothing.
    const noisySeed = `${web.origins[2]?.replace('http:', 'HTTP:')}/p/%32?utm_source=x#top`;
    expect(web.groundTruth([noisySeed], 'host')).toEqual(web.groundTruth([web.pageUrl(2, 2)], 'host'));
    expect(web.groundTruth(['http://127.9.9.9:1/', `${web.origins[0]}/nope`])).toEqual(new Set());
    const allowed = web.groundTruth(web.rootUrls(), 'any', { allow: (url) => !url.endsWith('/p/5') });
    expect(allowed.size).toBe(all.size - 3);
  });

  it('describes itself as JSON', () => {
    const summary = web.describe();
    expect(JSON.parse(JSON.stringify(summary))).toEqual(summary);
    expect(summary).toMatchObject({ hosts: 3, pagesPerHost: 30, totalPages: 90, port: web.port, seeds: [`${web.origins[0]}/`] });
    expect(summary.origins).toEqual(web.origins.slice(0, 3));
  });
});

describe('robots.txt', () => {
  it('serves "Allow: /" by default', async () => {
    const web = await TestWeb.start({ hosts: 1, pagesPerHost: 2, linksPerPage: 1, crossHostLinks: 0, baseAddress: '127.1.2.1' });
    try {
      const reply = await request(web.origins[0] as string, '/robots.txt');
      expect(reply).toMatchObject({ status: 200, body: 'User-agent: *\nAllow: /\n' });
      expect(reply.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(await lastEntry(web)).toMatchObject({ pageKey: '/robots.txt', status: 200 });
    } finally {
      await web.stop();
    }
  });

  it('serves a custom body per host, and 404 where the function returns null', async () => {
    const web = await TestWeb.start({
      hosts: 2,
      pagesPerHost: 2,
      linksPerPage: 1,
      crossHostLinks: 0,
      baseAddress: '127.1.2.11',
      robotsTxt: (host) => (host === 0 ? 'User-agent: *\nDisallow: /p/\nCrawl-delay: 2\n' : null),
    });
    try {
      expect(await request(web.origins[0] as string, '/robots.txt')).toMatchObject({ status: 200, body: 'User-agent: *\nDisallow: /p/\nCrawl-delay: 2\n' });
      expect(await request(web.origins[1] as string, '/robots.txt')).toMatchObject({ status: 404 });
      expect(await lastEntry(web)).toMatchObject({ pageKey: '/robots.txt', status: 404, hostIndex: 1 });
    } finally {
      await web.stop();
    }
  });
});

describe('latency', () => {
  it('delays the response headers by latencyMs', async () => {
    const web = await TestWeb.start({ hosts: 1, pagesPerHost: 2, linksPerPage: 1, crossHostLinks: 0, baseAddress: '127.1.3.1', latencyMs: 120 });
    try {
      const started = performance.now();
      await request(web.origins[0] as string, '/');
      expect(performance.now() - started).toBeGreaterThanOrEqual(115);
      const entry = await lastEntry(web);
      expect((entry.endHr as number) - (entry.startHr as number)).toBeGreaterThanOrEqual(119);
    } finally {
      await web.stop();
    }
  });

  it('draws latency from [min, max]', async () => {
    const web = await TestWeb.start({ hosts: 1, pagesPerHost: 2, linksPerPage: 1, crossHostLinks: 0, baseAddress: '127.1.3.11', latencyMs: { min: 30, max: 70 } });
    try {
      await Promise.all(Array.from({ length: 12 }, () => request(web.origins[0] as string, '/p/1')));
      await web.idle();
      const durations = web.log.map((e) => (e.endHr as number) - (e.startHr as number));
      expect(Math.min(...durations)).toBeGreaterThanOrEqual(29);
      expect(Math.max(...durations)).toBeLessThan(200);
      expect(new Set(durations.map(Math.round)).size).toBeGreaterThan(1);
    } finally {
      await web.stop();
    }
  });

  it('refuses max < min', async () => {
    await expect(TestWeb.start({ hosts: 1, pagesPerHost: 1, linksPerPage: 0, crossHostLinks: 0, latencyMs: { min: 5, max: 1 } })).rejects.toMatchObject({
      code: 'ERR_TESTWEB_OPTIONS',
    });
  });
});

describe('host handlers', () => {
  it('lets a host misbehave, fall back to the default page, and annotate the log', async () => {
    let calls = 0;
    const web = await TestWeb.start({
      hosts: 3,
      pagesPerHost: 5,
      linksPerPage: 2,
      crossHostLinks: 1,
      baseAddress: '127.1.4.1',
      hostHandlers: {
        1: (_req, res, ctx) => {
          calls++;
          if (calls === 1) {
            ctx.log({ note: 'throttled' });
            res.writeHead(429, { 'retry-after': '2' });
            res.end('slow down');
            return;
          }
          ctx.serve();
        },
        2: async () => {
          throw new Error('boom');
        },
      },
    });
    try {
      const first = await request(web.origins[1] as string, '/p/1');
      expect(first).toMatchObject({ status: 429, body: 'slow down' });
      expect(first.headers['retry-after']).toBe('2');
      expect(await lastEntry(web)).toMatchObject({ hostIndex: 1, pageKey: '/p/1', status: 429, note: 'throttled', bytes: 9 });
      const second = await request(web.origins[1] as string, '/p/1');
      expect(second).toMatchObject({ status: 200, body: web.html(1, 1) });
      expect(await request(web.origins[2] as string, '/')).toMatchObject({ status: 500 });
      expect(await lastEntry(web)).toMatchObject({ hostIndex: 2, status: 500, note: 'handler threw: boom' });
      expect(await request(web.origins[0] as string, '/')).toMatchObject({ status: 200 });
      expect(calls).toBe(2);
    } finally {
      await web.stop();
    }
  });
});

describe('extra hosts', () => {
  it('serves hosts beyond the link table through their handlers only, outside the ground truth', async () => {
    const web = await TestWeb.start({
      hosts: 2,
      extraHosts: 2,
      pagesPerHost: 3,
      linksPerPage: 2,
      crossHostLinks: 1,
      baseAddress: '127.1.8.1',
      noisyLinks: false,
      hostHandlers: {
        3: (_req, res, ctx) => {
          if (ctx.pageKey === '/robots.txt') ctx.serve();
          else res.end('extra');
        },
      },
    });
    try {
      expect(web.origins).toHaveLength(4);
      expect(web.rootUrls()).toHaveLength(4);
      expect(web.describe()).toMatchObject({ hosts: 2, extraHosts: 2, seeds: [`${web.origins[0]}/`], lastOrigin: web.origins[3] });
      expect(web.groundTruth(web.rootUrls())).toEqual(web.groundTruth([`${web.origins[0]}/`]));
      expect([...web.groundTruth(web.rootUrls())].every((u) => web.hostIndexOf(u)! < 2)).toBe(true);
      expect(web.hostIndexOf(`${web.origins[3]}/`)).toBe(3);
      expect(() => web.pageUrl(2, 0)).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_RANGE' }));
      // No page of the link table names an extra host.
      for (let host = 0; host < 2; host++) {
        for (let page = 0; page < 3; page++) expect(web.links(host, page).every((l) => web.hostIndexOf(l.url ?? '')! < 2)).toBe(true);
      }
      expect(await request(web.origins[2] as string, '/')).toMatchObject({ status: 404 });
      expect(await lastEntry(web)).toMatchObject({ hostIndex: 2, pageKey: null, status: 404 });
      expect(await request(web.origins[2] as string, '/robots.txt')).toMatchObject({ status: 200, body: 'User-agent: *\nAllow: /\n' });
      expect(await request(web.origins[3] as string, '/p/1')).toMatchObject({ status: 200, body: 'extra' });
      expect(await lastEntry(web)).toMatchObject({ hostIndex: 3, pageKey: null });
      expect(await request(web.origins[3] as string, '/robots.txt')).toMatchObject({ status: 200 });
    } finally {
      await web.stop();
    }
  });

  it('refuses a negative or fractional count', async () => {
    for (const extraHosts of [-1, 1.5]) {
      await expect(TestWeb.start({ hosts: 1, extraHosts, pagesPerHost: 1, linksPerPage: 0, crossHostLinks: 0 })).rejects.toMatchObject({ code: 'ERR_TESTWEB_OPTIONS' });
    }
  });
});

describe('binding and stopping', () => {
  it('binds 300 hosts, and stop() releases every address and socket', async () => {
    const options = { hosts: 300, pagesPerHost: 2, linksPerPage: 1, crossHostLinks: 1, baseAddress: '127.3.0.1' };
    const first = await TestWeb.start({
      ...options,
      // Host 7 is a tarpit: it never answers, so stop() must cut an in-flight request.
      hostHandlers: { 7: (_req, _res, ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve())) },
    });
    const port = first.port;
    expect(first.origins.at(-1)).toBe(`http://127.3.1.46:${port}`);
    const agent = new http.Agent({ keepAlive: true });
    try {
      // An idle keep-alive connection and a request that never completes must not hold stop() up.
      expect(await request(first.origins[299] as string, '/', { agent })).toMatchObject({ status: 200 });
      const hanging = request(first.origins[7] as string, '/').catch((error: unknown) => error);
      while (first.log.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
      const stopping = performance.now();
      await first.stop();
      expect(performance.now() - stopping).toBeLessThan(1000);
      expect(await hanging).toMatchObject({ code: 'ECONNRESET' });
      await first.idle();
      expect(first.log[1]).toMatchObject({ hostIndex: 7, aborted: true, status: 0 });
      await first.stop(); // idempotent

      const second = await TestWeb.start({ ...options, port });
      try {
        expect(second.port).toBe(port);
        expect(await request(second.origins[299] as string, '/')).toMatchObject({ status: 200, body: second.html(299, 0) });
        expect(await request(second.origins[0] as string, '/p/1')).toMatchObject({ status: 200 });
      } finally {
        await second.stop();
      }
    } finally {
      agent.destroy();
    }
  });

  it('fails with ERR_TESTWEB_BIND when a fixed port is taken on a later address, and releases the others', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen({ host: '127.1.5.2', port: 0 }, resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      await expect(TestWeb.start({ hosts: 3, pagesPerHost: 1, linksPerPage: 0, crossHostLinks: 0, baseAddress: '127.1.5.1', port })).rejects.toMatchObject({
        code: 'ERR_TESTWEB_BIND',
        cause: expect.objectContaining({ code: 'EADDRINUSE' }),
      });
      const probe = net.createServer();
      await new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.listen({ host: '127.1.5.1', port }, resolve);
      });
      await new Promise((resolve) => probe.close(resolve));
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('retries with a new port when a later address has the chosen port taken', async () => {
    let attempts = 0;
    const { servers, port } = await listenAll(
      ['127.1.6.1', '127.1.6.2'],
      (index) => {
        const server = http.createServer();
        if (index === 0) attempts++;
        if (index === 1 && attempts === 1) {
          // Simulates the race: someone else took this port on the second address.
          server.listen = (() => {
            setImmediate(() => server.emit('error', Object.assign(new Error('taken'), { code: 'EADDRINUSE' })));
            return server;
          }) as typeof server.listen;
        }
        return server;
      },
      0,
      3,
    );
    try {
      expect(attempts).toBe(2);
      expect(servers.every((s) => s.listening)).toBe(true);
      expect(port).toBeGreaterThan(0);
    } finally {
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    }
  });

  it('refuses options that describe no web', async () => {
    for (const bad of [{ hosts: 0 }, { baseAddress: '10.0.0.1' }, { port: 70000 }, { pageBytes: -1 }]) {
      await expect(TestWeb.start({ hosts: 1, pagesPerHost: 1, linksPerPage: 0, crossHostLinks: 0, ...bad })).rejects.toMatchObject({ code: 'ERR_TESTWEB_OPTIONS' });
    }
  });
});

describe('analyzeLog on a real crawl', () => {
  it('reports a polite sequential crawl as clean and complete', async () => {
    const web = await TestWeb.start({ hosts: 2, pagesPerHost: 6, linksPerPage: 2, crossHostLinks: 1, baseAddress: '127.1.7.1', noisyLinks: false });
    try {
      // The simplest correct crawler: robots.txt first, then the ground truth in order, one at a time.
      for (const origin of web.origins) await request(origin, '/robots.txt');
      for (const url of web.groundTruth(web.rootUrls())) {
        const { origin, pathname, search } = new URL(url);
        await request(origin, pathname + search);
      }
      await web.idle();
      const analysis = analyzeLog(web.log, { minIntervalMs: 0, expected: web.groundTruth(web.rootUrls()) });
      expect(analysis).toMatchObject({ ok: true, requests: 14, robotsRequests: 2, highResolution: true, concurrency: { maxPerHost: 1 } });
    } finally {
      await web.stop();
    }
  });
});

describe('host names', () => {
  it('names hosts h<i>.<suffix>, serves them on their addresses, and exports a hosts file', async () => {
    const web = await TestWeb.start({ hosts: 3, pagesPerHost: 2, linksPerPage: 1, crossHostLinks: 1, hostnames: 'web.test', noisyLinks: false });
    try {
      expect(web.origins[1]).toBe(`http://h1.web.test:${web.port}`);
      expect(web.addressOf('h1.web.test')).toBe('127.1.0.2');
      expect(web.addressOf('h9.other.test')).toBeUndefined();
      expect(web.hostsFile().split('\n')[2]).toBe('127.1.0.3\th2.web.test');
      const res = await fetch(`http://127.1.0.2:${web.port}/`, { headers: { host: `h1.web.test:${web.port}` } });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain(`http://h2.web.test:${web.port}/`);
      await web.idle();
      expect(web.log[0]?.host).toBe(`h1.web.test:${web.port}`);
    } finally {
      await web.stop();
    }
  });
});
