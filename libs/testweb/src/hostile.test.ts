import http from 'node:http';
import net from 'node:net';
import { createGunzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostileWeb } from './hostile.js';
import { HOSTILE_KINDS, startHostileWeb } from './hostile.js';
import { HUGE_ROBOTS, hugePageLayout } from './hostile/bodies.js';
import { decodeWindows1252 } from './hostile/encodings.js';
import { BOMB_PREFIX, gzipBomb } from './hostile/gzip-bomb.js';
import type { RequestLogEntry } from './log.js';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** We cut the connection (stopAfterBytes / stopAfterMs / headersTimeoutMs). */
  cut: boolean;
  ms: number;
}

interface GetOptions {
  method?: string;
  /** Close the connection once this many body bytes arrived. */
  stopAfterBytes?: number;
  /** Close the connection this long after the headers. */
  stopAfterMs?: number;
  /** Give up (status 0) when no headers came in this long. */
  headersTimeoutMs?: number;
}

/** A raw GET: the path goes on the wire as given, the body comes back as bytes. */
function get(url: string, options: GetOptions = {}): Promise<Reply> {
  const { hostname, port, pathname, search } = new URL(url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, path: pathname + search, method: options.method ?? 'GET', agent: false });
    const timer = options.headersTimeoutMs === undefined ? null : setTimeout(() => {
      req.destroy();
      resolve({ status: 0, headers: {}, body: Buffer.alloc(0), cut: true, ms: performance.now() - started });
    }, options.headersTimeoutMs);
    req.on('response', (res) => {
      if (timer !== null) clearTimeout(timer);
      const chunks: Buffer[] = [];
      let size = 0;
      let cut = false;
      const finish = (): void => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), cut, ms: performance.now() - started });
      const stop = (): void => {
        if (cut) return;
        cut = true;
        req.destroy();
        finish();
      };
      if (options.stopAfterMs !== undefined) setTimeout(stop, options.stopAfterMs);
      res.on('data', (chunk: Buffer) => {
        if (cut) return;
        chunks.push(chunk);
        size += chunk.byteLength;
        if (options.stopAfterBytes !== undefined && size >= options.stopAfterBytes) stop();
      });
      res.on('end', () => !cut && finish());
      res.on('error', (error) => !cut && reject(error));
    });
    req.on('error', (error) => {
      if (!req.destroyed || (error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    req.end();
  });
}

const text = (reply: Reply): string => reply.body.toString('utf8');

const decode1252 = (bytes: Buffer): string => decodeWindows1252(bytes);
const decoder = (charset: string) => (bytes: Buffer): string => new TextDecoder(charset).decode(bytes);
const hrefs = (html: string): string[] => [...html.matchAll(/<a href="([^"]*)"/g)].map((m) => (m[1] as string).replace(/&amp;/g, '&'));

describe('the hostile web', () => {
  let hostile: HostileWeb;
  const url = (kind: (typeof HOSTILE_KINDS)[number], path: string): string => `${hostile.expectation(kind).origin}${path}`;

  /** The log entry of the last request to a URL's host, once every response has ended. */
  async function lastEntry(target: string): Promise<RequestLogEntry> {
    await hostile.web.idle();
    const host = new URL(target).host;
    const entry = hostile.web.log.filter((e) => e.host === host).at(-1);
    if (entry === undefined) throw new Error(`no request to ${host}`);
    return entry;
  }

  beforeAll(async () => {
    hostile = await startHostileWeb({ kinds: HOSTILE_KINDS, normalHosts: 2, pagesPerHost: 4, baseAddress: '127.1.40.1', seed: 5 });
  });
  afterAll(async () => {
    await hostile?.stop();
  });

  it('puts every host in one /16 and the private server outside it', () => {
    const { web, allowCidr, privateServer, seeds, expectations } = hostile;
    expect(allowCidr).toBe('127.1.0.0/16');
    expect(web.origins).toHaveLength(2 + HOSTILE_KINDS.length);
    for (const origin of web.origins) expect(new URL(origin).hostname).toMatch(/^127\.1\.\d+\.\d+$/);
    expect(privateServer.origin).toMatch(/^http:\/\/127\.0\.0\.99:\d+$/);
    expect(expectations.map((e) => e.kind)).toEqual([...HOSTILE_KINDS]);
    expect(expectations.map((e) => e.hostIndex)).toEqual(HOSTILE_KINDS.map((_, i) => 2 + i));
    expect(seeds).toEqual([`${web.origins[0]}/`, ...web.origins.slice(2).map((o) => `${o}/`)]);
    expect(hostile.normalExpected.size).toBe(8);
    for (const e of expectations) {
      expect(e.origin).toBe(web.origins[e.hostIndex]);
      expect(e.notes.length).toBeGreaterThan(20);
      for (const u of [...e.mustFetch, ...e.mustRequest, ...e.mustNotFetch, ...e.mustNotFetchPrefixes]) {
        expect(u.startsWith(e.origin) || u.startsWith(privateServer.origin)).toBe(true);
      }
    }
  });

  it('calendar-trap: days link to the day before and after, in both forms, forever', async () => {
    const root = text(await get(url('calendar-trap', '/')));
    const [query, path] = hrefs(root);
    expect(query).toMatch(/^\/calendar\?date=2026-\d\d-\d\d$/);
    expect(path).toBe(query?.replace('?date=', '/').replace(/-/g, '/'));
    let current = query as string;
    for (let day = 0; day < 40; day++) {
      const links = hrefs(text(await get(url('calendar-trap', current))));
      expect(links).toHaveLength(4);
      current = links[1] as string;
    }
    expect(current).not.toBe(query);
    const pathLinks = hrefs(text(await get(url('calendar-trap', '/calendar/2026/11/30'))));
    expect(pathLinks).toEqual(['/calendar/2026/11/29', '/calendar/2026/12/01', '/calendar?date=2026-11-30', '/']);
    expect(hrefs(text(await get(url('calendar-trap', '/calendar?date=2028-02-29'))))).toContain('/calendar?date=2028-03-01');
    for (const bad of ['/calendar?date=2026-02-30', '/calendar/2026/13/01', '/calendar?date=0999-01-01', '/calendar']) {
      expect((await get(url('calendar-trap', bad))).status).toBe(404);
    }
    expect(hostile.expectation('calendar-trap').maxRequests).toBe(100);
  });

  it('redirects: short chain, long chain, loop, private target, offsite', async () => {
    const hop = async (path: string): Promise<[number, string | undefined]> => {
      const reply = await get(url('redirects', path));
      return [reply.status, reply.headers.location];
    };
    const origin = hostile.expectation('redirects').origin;
    expect(await hop('/r/short')).toEqual([301, `${origin}/r/short/1`]);
    expect(await hop('/r/short/1')).toEqual([302, 'final']);
    expect((await get(new URL('final', `${origin}/r/short/1`).href)).status).toBe(200);
    let path = '/r/long';
    const chain: number[] = [];
    for (;;) {
      const [status, location] = await hop(path);
      if (status === 200) break;
      chain.push(status);
      path = location as string;
    }
    expect(chain).toEqual([301, 302, 303, 307, 308, 301, 302, 303]);
    expect(path).toBe('/r/long/final');
    expect(await hop('/r/loop')).toEqual([302, '/r/loop/b']);
    expect(await hop('/r/loop/b')).toEqual([302, '/r/loop']);
    expect(await hop('/r/private')).toEqual([302, hostile.privateServer.secretUrl]);
    expect(await hop('/r/offsite')).toEqual([301, hostile.web.pageUrl(0, 1)]);
    const e = hostile.expectation('redirects');
    expect(e.mustFetch).toContain(`${origin}/r/short/final`);
    expect(e.mustNotFetch).toEqual([`${origin}/r/long/6`, `${origin}/r/long/7`, `${origin}/r/long/final`, hostile.privateServer.secretUrl]);
    expect(e.limits).toEqual([{ url: `${origin}/r/loop`, match: 'prefix', maxRequests: 6 }]);
    expect(hostile.privateServer.log).toEqual([]);
  });

  it('the private server logs a request that reaches it', async () => {
    const reply = await get(hostile.privateServer.secretUrl);
    expect(reply.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(hostile.privateServer.log).toHaveLength(1);
    expect(hostile.privateServer.log[0]).toMatchObject({ hostIndex: -1, path: '/secret', status: 200, method: 'GET' });
    expect(hostile.privateServer.log[0]?.bytes).toBe(reply.body.byteLength);
    expect(hostile.analyze({ robotsFirst: false, duplicates: false }).counts.private).toBe(1);
    hostile.privateServer.log.length = 0;
  });

  it('throttle-429: 429 with Retry-After: 2 once per page, then 200; the log knows when the next request may come', async () => {
    for (const path of ['/a/2', '/a/3']) {
      const first = await get(url('throttle-429', path));
      expect(first.status).toBe(429);
      expect(first.headers['retry-after']).toBe('2');
      const entry = await lastEntry(url('throttle-429', path));
      expect(entry.status).toBe(429);
      expect((entry.notBefore as number) - entry.start).toBeGreaterThanOrEqual(1995);
      expect((entry.notBefore as number) - entry.start).toBeLessThan(2100);
      expect((await get(url('throttle-429', path))).status).toBe(200);
    }
    expect((await get(url('throttle-429', '/robots.txt'))).status).toBe(200);
    expect(hostile.expectation('throttle-429')).toMatchObject({ minGapAfterStatusMs: { 429: 2000 }, retryAfterMs: 2000 });
  });

  it('throttle-429-bare and unavailable-503-bare: no Retry-After, then 200', async () => {
    for (const [kind, status] of [['throttle-429-bare', 429], ['unavailable-503-bare', 503]] as const) {
      const first = await get(url(kind, '/a/3'));
      expect(first.status).toBe(status);
      expect(first.headers['retry-after']).toBeUndefined();
      expect((await lastEntry(url(kind, '/a/3'))).notBefore).toBeUndefined();
      expect((await get(url(kind, '/a/3'))).status).toBe(200);
      expect(hostile.expectation(kind).minGapAfterStatusMs).toBeUndefined();
    }
  });

  it('unavailable-503: 503 with Retry-After as an HTTP-date 2–3 s ahead, then 200', async () => {
    const before = Date.now();
    const first = await get(url('unavailable-503', '/a/3'));
    expect(first.status).toBe(503);
    const date = Date.parse(first.headers['retry-after'] as string);
    expect(first.headers['retry-after']).toMatch(/GMT$/);
    expect(date - before).toBeGreaterThanOrEqual(2000);
    expect(date - before).toBeLessThanOrEqual(3100);
    expect(date % 1000).toBe(0);
    expect((await lastEntry(url('unavailable-503', '/a/3'))).notBefore).toBe(date);
    expect((await get(url('unavailable-503', '/a/3'))).status).toBe(200);
  });

  it('always-500: /broken is 500 every time', async () => {
    for (let i = 0; i < 3; i++) expect((await get(url('always-500', '/broken'))).status).toBe(500);
    expect(hostile.expectation('always-500').limits).toEqual([{ url: url('always-500', '/broken'), match: 'exact', maxRequests: 4 }]);
  });

  it('tarpit: headers at once, then one byte every 500 ms, and the log records what was written until the client left', async () => {
    const reply = await get(url('tarpit', '/tarpit'), { stopAfterMs: 1750 });
    expect(reply.status).toBe(200);
    expect(reply.cut).toBe(true);
    expect(reply.body.byteLength).toBeGreaterThanOrEqual(3);
    expect(reply.body.byteLength).toBeLessThanOrEqual(4);
    expect(reply.body.toString()).toBe('<!doctype html>'.slice(0, reply.body.byteLength));
    const entry = await lastEntry(url('tarpit', '/tarpit'));
    expect(entry).toMatchObject({ status: 200, aborted: true, pageKey: '/tarpit' });
    expect(entry.bytes).toBeGreaterThanOrEqual(reply.body.byteLength);
    expect(entry.bytes).toBeLessThanOrEqual(reply.body.byteLength + 1);
    expect(entry.end - entry.start).toBeGreaterThanOrEqual(1700);
    expect(entry.end - entry.start).toBeLessThan(2500);
    const limit = hostile.expectation('tarpit').limits[0];
    expect(limit).toEqual({ url: url('tarpit', '/tarpit'), match: 'exact', maxRequests: 4, maxResponseMs: 62_000, maxBytesPerResponse: 125 });
  });

  it('huge-page: 12 MiB with links before and after the 10 MiB cap, streamed as the client reads', async () => {
    const full = await get(url('huge-page', '/huge'));
    const size = 12 * 1024 * 1024;
    expect(full.status).toBe(200);
    expect(Number(full.headers['content-length'])).toBe(size);
    expect(full.body.byteLength).toBe(size);
    const layout = hugePageLayout(size, 10 * 1024 * 1024);
    for (const link of [...layout.before, ...layout.after]) {
      expect(full.body.indexOf(`<a href="${link.href}">`, 0, 'utf8')).toBe(link.offset + 1);
    }
    expect(layout.before.every((l) => l.offset < 10 * 1024 * 1024)).toBe(true);
    expect(layout.after.every((l) => l.offset > 10 * 1024 * 1024)).toBe(true);
    expect(hrefs(full.body.toString('utf8'))).toEqual([...layout.before, ...layout.after].map((l) => l.href));
    expect(full.body.subarray(-22).toString()).toBe('</div>\n</body>\n</html>\n'.slice(-22));
    expect((await lastEntry(url('huge-page', '/huge'))).bytes).toBe(size);

    const partial = await get(url('huge-page', '/huge'), { stopAfterBytes: 256 * 1024 });
    expect(partial.cut).toBe(true);
    const entry = await lastEntry(url('huge-page', '/huge'));
    expect(entry.aborted).toBe(true);
    expect(entry.bytes).toBeLessThan(size);
    const e = hostile.expectation('huge-page');
    expect(e.mustFetch).toEqual(expect.arrayContaining(layout.before.map((l) => url('huge-page', l.href))));
    expect(e.mustNotFetch).toEqual(layout.after.map((l) => url('huge-page', l.href)));
  });

  it('gzip-bomb: gzip that inflates to gigabytes, streamed: a client that stops early costs the server a bounded write', async () => {
    const bomb = gzipBomb(16 * 1024 ** 3);
    const { hostname, port } = new URL(url('gzip-bomb', '/'));
    const inflated = await new Promise<{ headers: http.IncomingHttpHeaders; bytes: number; head: string }>((resolve, reject) => {
      const req = http.get({ host: hostname, port, path: '/bomb', agent: false }, (res) => {
        const gunzip = createGunzip();
        let bytes = 0;
        let head = '';
        gunzip.on('data', (chunk: Buffer) => {
          if (head === '') head = chunk.subarray(0, BOMB_PREFIX.length).toString('utf8');
          bytes += chunk.byteLength;
          // A crawler's body cap: 10 MiB decoded, then it leaves.
          if (bytes >= 10 * 1024 * 1024) {
            req.destroy();
            gunzip.destroy();
            resolve({ headers: res.headers, bytes, head });
          }
        });
        gunzip.on('error', reject);
        res.pipe(gunzip);
      });
      req.on('error', () => undefined);
    });
    expect(inflated.headers).toMatchObject({ 'content-encoding': 'gzip', 'content-length': String(bomb.compressedBytes) });
    expect(bomb.inflatedBytes).toBeGreaterThanOrEqual(2 ** 30);
    expect(inflated.head).toBe(BOMB_PREFIX);
    const entry = await lastEntry(url('gzip-bomb', '/bomb'));
    expect(entry).toMatchObject({ status: 200, aborted: true, pageKey: '/bomb' });
    const limit = hostile.expectation('gzip-bomb').limits[0];
    expect(entry.bytes).toBeLessThanOrEqual(limit?.maxBytesPerResponse as number);
    expect(entry.bytes).toBeLessThan(bomb.compressedBytes);
    expect(limit?.maxBytesPerResponse).toBeLessThan(bomb.compressedBytes);
  });

  it('encodings: the bytes on the wire carry each charset, and only the right decoding names a page that exists', async () => {
    type Decode = (bytes: Buffer) => string;
    const cases: { path: string; type: string; right: Decode; wrong: Decode[]; href: RegExp; raw: number[] }[] = [
      { path: '/enc/latin1', type: 'text/html; charset=ISO-8859-1', right: decode1252, wrong: [decoder('utf-8')], href: /\/enc\/latin1\/caf/, raw: [0x63, 0x61, 0x66, 0xe9, 0x22] },
      // Strict ISO-8859-1 (Buffer's latin1, and Node's buggy TextDecoder) reads 93/94 as C1 controls.
      { path: '/enc/cp1252', type: 'text/html', right: decode1252, wrong: [decoder('utf-8'), (b) => b.toString('latin1')], href: /\/enc\/cp1252\//, raw: [0x2f, 0x93, 0x71] },
      { path: '/enc/sjis', type: 'text/html', right: decoder('shift_jis'), wrong: [decode1252, decoder('utf-8')], href: /\/enc\/sjis\//, raw: [0x2f, 0x93, 0xfa, 0x96, 0x7b, 0x22] },
      { path: '/enc/bom', type: 'text/html', right: decoder('utf-8'), wrong: [decode1252], href: /\/enc\/bom\//, raw: [0x6e, 0x61, 0xc3, 0xaf, 0x76] },
      { path: '/enc/invalid', type: 'text/html; charset=utf-8', right: decoder('utf-8'), wrong: [decode1252], href: /\/enc\/invalid\/r/, raw: [0xff, 0x20, 0xc3, 0x28] },
    ];
    const origin = hostile.expectation('encodings').origin;
    for (const c of cases) {
      const reply = await get(`${origin}${c.path}`);
      expect(reply.headers['content-type']).toBe(c.type);
      expect(reply.body.indexOf(Buffer.from(c.raw))).toBeGreaterThan(0);
      const link = (decode: Decode): string => {
        const href = hrefs(decode(reply.body)).find((h) => c.href.test(h)) as string;
        const target = new URL(href, `${origin}${c.path}`);
        return target.pathname + target.search;
      };
      expect({ path: c.path, status: (await get(`${origin}${link(c.right)}`)).status }).toEqual({ path: c.path, status: 200 });
      for (const wrong of c.wrong) {
        expect({ path: c.path, status: (await get(`${origin}${link(wrong)}`)).status }).toEqual({ path: c.path, status: 404 });
      }
    }
    const bom = await get(`${origin}/enc/bom`);
    expect([...bom.body.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(text(bom)).not.toMatch(/charset/i);
    expect(text(await get(`${origin}/enc/cp1252`))).toContain('<meta charset="windows-1252">');
    expect(text(await get(`${origin}/enc/sjis`))).toContain('<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">');
    expect(new TextDecoder('shift_jis').decode((await get(`${origin}/enc/sjis`)).body)).toContain('<title>日本語のページ</title>');
    const invalid = (await get(`${origin}/enc/invalid`)).body;
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(invalid)).toThrow();
    expect(hostile.expectation('encodings').mustFetch).toEqual(expect.arrayContaining([
      `${origin}/enc/latin1/caf%C3%A9`,
      `${origin}/enc/cp1252/%E2%80%9Cquoted%E2%80%9D`,
      `${origin}/enc/sjis/%E6%97%A5%E6%9C%AC`,
      `${origin}/enc/bom/na%C3%AFve`,
      `${origin}/enc/invalid/ok`,
      `${origin}/enc/invalid/r%C3%A9sum%C3%A9`,
    ]));
  });

  it('robots-404, robots-500, robots-redirect, robots-crawl-delay, robots-disallow serve their robots.txt', async () => {
    expect((await get(url('robots-404', '/robots.txt'))).status).toBe(404);
    expect((await get(url('robots-500', '/robots.txt'))).status).toBe(500);
    const moved = await get(url('robots-redirect', '/robots.txt'));
    expect([moved.status, moved.headers.location]).toEqual([301, '/real-robots.txt']);
    expect(text(await get(url('robots-redirect', '/real-robots.txt')))).toBe('User-agent: *\nDisallow: /private/\n');
    expect(text(await get(url('robots-crawl-delay', '/robots.txt')))).toBe('User-agent: *\nCrawl-delay: 2\nAllow: /\n');
    expect(text(await get(url('robots-disallow', '/robots.txt')))).toBe('User-agent: *\nDisallow: /private/\n');
    expect(hrefs(text(await get(url('robots-disallow', '/'))))).toEqual(expect.arrayContaining(['/private/1', '/private/2', '/go-private']));
    const go = await get(url('robots-disallow', '/go-private'));
    expect([go.status, go.headers.location]).toEqual([302, '/private/3']);
    expect(hostile.expectation('robots-500')).toMatchObject({ mustFetch: [], robotsDisallow: ['/'] });
    expect(hostile.expectation('robots-500').mustNotFetch).toEqual(['/', '/a/1', '/a/2', '/a/3'].map((p) => url('robots-500', p)));
    expect(hostile.expectation('robots-crawl-delay').minIntervalMs).toBe(2000);
    expect(hostile.expectation('robots-404').mustFetch).toContain(url('robots-404', '/private/1'));
  });

  it('robots-timeout: robots.txt never answers, and the log shows when the client gave up', async () => {
    const reply = await get(url('robots-timeout', '/robots.txt'), { headersTimeoutMs: 400 });
    expect(reply.status).toBe(0);
    const entry = await lastEntry(url('robots-timeout', '/robots.txt'));
    expect(entry).toMatchObject({ status: 0, aborted: true, bytes: 0, pageKey: '/robots.txt' });
    expect(entry.end - entry.start).toBeGreaterThanOrEqual(390);
    expect(hostile.expectation('robots-timeout').robotsDisallow).toEqual(['/']);
  });

  it('robots-huge: 600 KiB, one rule early, one past 560 KiB, nothing but comments in between', async () => {
    const body = text(await get(url('robots-huge', '/robots.txt')));
    expect(Buffer.byteLength(body)).toBe(600 * 1024);
    const lines = body.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.filter((l) => !l.startsWith('#'))).toEqual(['User-agent: *', 'Disallow: /before/', 'Disallow: /after/']);
    expect(lines.every((l) => l.length > 0 && l.length < 100)).toBe(true);
    expect(body.indexOf('Disallow: /before/')).toBeLessThan(200);
    expect(body.indexOf('Disallow: /after/')).toBe(HUGE_ROBOTS.afterOffset);
    expect(HUGE_ROBOTS.afterOffset).toBeGreaterThan(512_000);
    const e = hostile.expectation('robots-huge');
    expect(e.robotsDisallow).toEqual(['/before/']);
    expect(e.mustFetch).toContain(url('robots-huge', '/after/1'));
    expect(e.mustNotFetch).toEqual([url('robots-huge', '/before/1')]);
  });

  it('meta-robots: meta robots, X-Robots-Tag and a crawler-specific meta on pages whose targets are linked from nowhere else', async () => {
    const root = hrefs(text(await get(url('meta-robots', '/'))));
    const nofollow = text(await get(url('meta-robots', '/meta/nofollow')));
    expect(nofollow).toContain('<meta name="robots" content="nofollow">');
    expect(hrefs(nofollow)).toEqual(['/meta/nofollow/target-1', '/meta/nofollow/target-2']);
    expect(text(await get(url('meta-robots', '/meta/noindex')))).toContain('<meta name="robots" content="noindex">');
    expect((await get(url('meta-robots', '/meta/header'))).headers['x-robots-tag']).toBe('nofollow');
    expect(text(await get(url('meta-robots', '/meta/token-none')))).toContain('<meta name="trawl" content="none">');
    expect(text(await get(url('meta-robots', '/meta/other-bot')))).toContain('<meta name="otherbot" content="nofollow">');
    for (const target of hostile.expectation('meta-robots').mustNotFetch) {
      expect(root).not.toContain(new URL(target).pathname);
      expect((await get(target)).status).toBe(200);
    }
    expect(hostile.expectation('meta-robots').mustNotFetch.map((u) => new URL(u).pathname)).toEqual([
      '/meta/nofollow/target-1', '/meta/nofollow/target-2', '/meta/header/target-1', '/meta/header/target-2',
      '/meta/token-none/target-1', '/meta/token-none/target-2',
    ]);
  });

  // Last: it spends the throttled hosts' first answers.
  it('answers every mustFetch URL with a 2xx (after the throttled first answers) and logs host, pageKey and status', async () => {
    for (const e of hostile.expectations) {
      for (const target of e.mustFetch) {
        let reply = await get(target);
        if (reply.status === 429 || reply.status === 503) reply = await get(target);
        expect({ target, status: reply.status }).toEqual({ target, status: 200 });
        const entry = await lastEntry(target);
        const { pathname, search } = new URL(target);
        expect(entry).toMatchObject({ hostIndex: e.hostIndex, host: new URL(e.origin).host, pageKey: pathname + search, status: 200 });
      }
    }
    const miss = await get(url('redirects', '/nope'));
    expect(miss.status).toBe(404);
    expect(await lastEntry(url('redirects', '/nope'))).toMatchObject({ pageKey: null, status: 404 });
  });

  it('answers HEAD without a body and other methods with 405 on hostile hosts', async () => {
    const head = await get(url('tarpit', '/tarpit'), { method: 'HEAD' });
    expect([head.status, head.body.byteLength]).toEqual([200, 0]);
    const post = await get(url('redirects', '/'), { method: 'POST' });
    expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD']);
  });
});

describe('startHostileWeb options and lifetime', () => {
  it('refuses options that describe no hostile web', async () => {
    const bad: Parameters<typeof startHostileWeb>[0][] = [
      { kinds: ['tarpit', 'tarpit'] },
      { kinds: ['no-such-kind' as 'tarpit'] },
      { kinds: ['tarpit'], privateAddress: '127.1.200.1' },
      { kinds: ['tarpit'], privateAddress: '10.0.0.1' },
      { kinds: ['huge-page'], hugePageBytes: 10 * 1024 * 1024 },
      { kinds: ['tarpit'], normalHosts: 0 },
      { kinds: ['tarpit'], throttleRepeats: 0 },
    ];
    for (const options of bad) await expect(startHostileWeb(options)).rejects.toMatchObject({ code: 'ERR_TESTWEB_OPTIONS' });
  });

  it('follows the crawler limits it is given', async () => {
    const hostile = await startHostileWeb({
      kinds: ['redirects', 'robots-huge', 'tarpit', 'throttle-429-bare'],
      baseAddress: '127.1.41.1',
      crawler: { maxRedirects: 8, robotsMaxBytes: 1024 * 1024, fetchDeadlineMs: 5000, minBackoffMs: 1500, robotsToken: 'otherbot' },
    });
    try {
      const redirects = hostile.expectation('redirects');
      expect(redirects.mustFetch).toContain(`${redirects.origin}/r/long/final`);
      expect(redirects.mustNotFetch).toEqual([hostile.privateServer.secretUrl]);
      expect(hostile.expectation('robots-huge').robotsDisallow).toEqual(['/before/', '/after/']);
      expect(hostile.expectation('tarpit').limits[0]).toMatchObject({ maxResponseMs: 7000, maxBytesPerResponse: 15 });
      expect(hostile.expectation('throttle-429-bare').minGapAfterStatusMs).toEqual({ 429: 1500 });
    } finally {
      await hostile.stop();
    }
  });

  it('stop() ends tarpits and hanging robots.txt requests and releases every address', async () => {
    const options = { kinds: ['tarpit', 'robots-timeout', 'gzip-bomb'] as const, baseAddress: '127.1.42.1', privateAddress: '127.0.0.98' };
    const first = await startHostileWeb({ ...options, kinds: [...options.kinds] });
    const port = first.web.port;
    const tarpit = get(`${first.expectation('tarpit').origin}/tarpit`).catch((error: unknown) => error);
    const robots = get(`${first.expectation('robots-timeout').origin}/robots.txt`).catch((error: unknown) => error);
    // A client that reads nothing: the bomb waits on back-pressure.
    const stalled = net.connect({ host: new URL(first.expectation('gzip-bomb').origin).hostname, port });
    stalled.write('GET /bomb HTTP/1.1\r\nHost: x\r\n\r\n');
    stalled.pause();
    stalled.on('error', () => undefined);
    while (first.web.log.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await first.settle(100)).toBe(false);
    const started = performance.now();
    await first.stop();
    expect(performance.now() - started).toBeLessThan(1000);
    await Promise.all([tarpit, robots]);
    expect(await first.settle(1000)).toBe(true);
    expect(first.web.log.every((e) => e.end >= 0 && e.aborted === true)).toBe(true);
    const bombEntry = first.web.log.find((e) => e.path === '/bomb');
    expect(bombEntry?.bytes).toBeLessThan(gzipBomb(16 * 1024 ** 3).compressedBytes);
    stalled.destroy();
    await first.stop();

    const second = await startHostileWeb({ ...options, kinds: [...options.kinds], port });
    try {
      expect(second.web.port).toBe(port);
      expect((await get(`${second.expectation('tarpit').origin}/`)).status).toBe(200);
    } finally {
      await second.stop();
    }
  });
});
