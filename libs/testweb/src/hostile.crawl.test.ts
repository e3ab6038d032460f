/**
 * A small reference crawler run against the hostile web: done right it leaves no violation
 * (so every expectation is achievable and no check fires on a real server log by accident);
 * with its manners switched off, each lapse shows up as the violation it should.
 */
import { sleep } from '@trawl/core';
import http from 'node:http';
import { createGunzip } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { HostileWeb } from './hostile.js';
import { DEFAULT_CRAWLER_LIMITS, HOSTILE_KINDS, POISON_KINDS, startHostileWeb } from './hostile.js';
import { decodeWindows1252 } from './hostile/encodings.js';
import type { CrawlerLimits } from './hostile/types.js';

interface Manners {
  robots: boolean;
  retryAfter: boolean;
  ssrfGuard: boolean;
  nofollow: boolean;
  bodyCap: boolean;
  /** Stores pages with NUL characters (false: storing fails, as in PostgreSQL text, and the fetch is retried). */
  poisonSafe: boolean;
}
const POLITE: Manners = { robots: true, retryAfter: true, ssrfGuard: true, nofollow: true, bodyCap: true, poisonSafe: true };

interface Fetched {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One GET with a deadline and a decoded-body cap (gzip inflated as it streams). Status 0: no answer in time. */
function fetchOnce(url: string, deadlineMs: number, maxBytes: number): Promise<Fetched> {
  const { hostname, port, pathname, search } = new URL(url);
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: Fetched): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(result);
    };
    const req = http.request({ host: hostname, port, path: pathname + search, agent: false, headers: { 'user-agent': 'reference/1.0' } });
    const timer = setTimeout(() => done({ status: 0, headers: {}, body: Buffer.alloc(0) }), deadlineMs);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const stream = res.headers['content-encoding'] === 'gzip' ? res.pipe(createGunzip()) : res;
      const result = (): Fetched => ({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      stream.on('data', (chunk: Buffer) => {
        const room = maxBytes - size;
        chunks.push(chunk.subarray(0, room));
        size += Math.min(room, chunk.byteLength);
        if (size >= maxBytes) done(result());
      });
      stream.on('end', () => done(result()));
      stream.on('error', () => done(result()));
    });
    req.on('error', () => done({ status: 0, headers: {}, body: Buffer.alloc(0) }));
    req.end();
  });
}

/** The page's text, decoded as a browser would: BOM, then Content-Type, then a meta tag, else UTF-8. */
function decodeHtml(body: Buffer, contentType: string | undefined): string {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return new TextDecoder('utf-8').decode(body);
  const head = body.subarray(0, 1024).toString('latin1');
  const label = (/charset=([\w-]+)/i.exec(contentType ?? '')?.[1] ?? /<meta[^>]*charset="?([\w-]+)/i.exec(head)?.[1] ?? 'utf-8').toLowerCase();
  if (['windows-1252', 'iso-8859-1', 'latin1', 'us-ascii', 'ascii'].includes(label)) return decodeWindows1252(body);
  return new TextDecoder(label).decode(body);
}

interface Robots {
  disallow: string[];
  delayMs: number;
}

/** The `User-agent: *` group of the first `maxBytes` bytes (a cut line is dropped). */
function parseRobots(body: Buffer, maxBytes: number): Robots {
  let text = body.subarray(0, maxBytes).toString('utf8');
  if (body.byteLength > maxBytes) text = text.slice(0, text.lastIndexOf('\n') + 1);
  const robots: Robots = { disallow: [], delayMs: 0 };
  let applies = false;
  for (const line of text.split('\n')) {
    const [field = '', value = ''] = line.replace(/#.*/, '').split(':').map((part) => part.trim());
    if (/^user-agent$/i.test(field)) applies = value === '*';
    else if (applies && /^disallow$/i.test(field) && value !== '') robots.disallow.push(value);
    else if (applies && /^crawl-delay$/i.test(field)) robots.delayMs = Number(value) * 1000;
  }
  return robots;
}

interface HostState {
  queue: { url: string; hops: number }[];
  robots: Robots | null;
  nextAt: number;
  enqueued: number;
  running: Promise<void> | null;
}

/** Crawls from the seeds: one request at a time per host, hosts in parallel. */
async function referenceCrawl(hostile: HostileWeb, limits: CrawlerLimits, manners: Manners, perHostBudget = 20): Promise<void> {
  const hosts = new Map<string, HostState>();
  const seen = new Set<string>();
  const gap = 100;

  const wait = async (host: HostState): Promise<void> => sleep(host.nextAt - Date.now());
  const retryAfterMs = (value: string | string[] | undefined): number => {
    if (typeof value !== 'string') return 0;
    return /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  };
  const request = async (host: HostState, url: string, maxBytes: number): Promise<Fetched> => {
    await wait(host);
    const reply = await fetchOnce(url, limits.fetchDeadlineMs, maxBytes);
    const delay = Math.max(gap, host.robots?.delayMs ?? 0, manners.retryAfter ? retryAfterMs(reply.headers['retry-after']) : 0);
    host.nextAt = Date.now() + delay;
    return reply;
  };

  const fetchRobots = async (origin: string, host: HostState): Promise<Robots> => {
    let url = `${origin}/robots.txt`;
    for (let hop = 0; hop <= limits.maxRedirects; hop++) {
      const reply = await request(host, url, limits.robotsMaxBytes + 1);
      if (reply.status >= 300 && reply.status < 400 && typeof reply.headers.location === 'string') {
        url = new URL(reply.headers.location, url).href;
        continue;
      }
      if (reply.status >= 200 && reply.status < 300) return parseRobots(reply.body, limits.robotsMaxBytes);
      if (reply.status >= 400 && reply.status < 500) return { disallow: [], delayMs: 0 };
      break;
    }
    return { disallow: ['/'], delayMs: 0 }; // RFC 9309 §2.3.1.4: unreachable means disallow all
  };

  const enqueue = (raw: string, base: string, hops: number): void => {
    let url: URL;
    try {
      url = new URL(raw, base);
    } catch {
      return;
    }
    url.hash = '';
    if (url.protocol !== 'http:' || (manners.ssrfGuard && !url.hostname.startsWith('127.1.'))) return;
    if (seen.has(url.href)) return;
    let host = hosts.get(url.origin);
    if (host === undefined) hosts.set(url.origin, (host = { queue: [], robots: null, nextAt: 0, enqueued: 0, running: null }));
    if (host.enqueued >= perHostBudget) return;
    seen.add(url.href);
    host.enqueued++;
    host.queue.push({ url: url.href, hops });
    host.running ??= run(url.origin, host).finally(() => (host.running = null));
  };

  const run = async (origin: string, host: HostState): Promise<void> => {
    host.robots ??= await fetchRobots(origin, host);
    for (let item = host.queue.shift(); item !== undefined; item = host.queue.shift()) {
      const { pathname, search } = new URL(item.url);
      if (manners.robots && host.robots.disallow.some((prefix) => (pathname + search).startsWith(prefix))) continue;
      for (let attempt = 1; attempt <= limits.attempts; attempt++) {
        const reply = await request(host, item.url, manners.bodyCap ? limits.maxBodyBytes : Number.MAX_SAFE_INTEGER);
        if (reply.status === 0 || reply.status === 429 || reply.status >= 500) continue;
        const location = reply.headers.location;
        if (reply.status >= 300 && reply.status < 400 && typeof location === 'string') {
          if (item.hops < limits.maxRedirects) enqueue(location, item.url, item.hops + 1);
          break;
        }
        if (reply.status !== 200 || !/^text\/html/.test(reply.headers['content-type'] ?? '')) break;
        const html = decodeHtml(reply.body, reply.headers['content-type']);
        if (!manners.poisonSafe && html.includes('\u0000')) continue;
        const metas = [...html.matchAll(/<meta name="([^"]+)" content="([^"]+)">/g)].filter((m) => m[1] === 'robots' || m[1] === limits.robotsToken);
        const directives = [String(reply.headers['x-robots-tag'] ?? ''), ...metas.map((m) => m[2] as string)].join(',');
        if (manners.nofollow && /nofollow|none/.test(directives)) break;
        for (const m of html.matchAll(/<a href="([^"]*)"/g)) enqueue((m[1] as string).replace(/&amp;/g, '&'), item.url, 0);
        break;
      }
    }
  };

  for (const seed of hostile.seeds) enqueue(seed, seed, 0);
  for (;;) {
    const running = [...hosts.values()].map((h) => h.running).filter((p): p is Promise<void> => p !== null);
    if (running.length === 0) break;
    await Promise.all(running);
  }
}

const LIMITS = { fetchDeadlineMs: 1500, attempts: 2 };

describe('a reference crawler on the hostile web', () => {
  it('leaves no violation when it minds its manners', async () => {
    const hostile = await startHostileWeb({
      kinds: HOSTILE_KINDS,
      baseAddress: '127.1.43.1',
      privateAddress: '127.0.0.97',
      plainPages: 1,
      pagesPerHost: 4,
      retryAfterSeconds: 1,
      calendarMaxRequests: 30,
      crawler: LIMITS,
    });
    try {
      await referenceCrawl(hostile, { ...DEFAULT_CRAWLER_LIMITS, ...LIMITS }, POLITE);
      expect(await hostile.settle()).toBe(true);
      const report = hostile.analyze();
      expect(report.violations).toEqual([]);
      // It really went through the traps.
      expect(report.analysis.statuses).toMatchObject({ 301: expect.any(Number), 404: expect.any(Number), 429: 4, 500: expect.any(Number), 503: 4 });
      expect(hostile.web.log.filter((e) => e.path.startsWith('/calendar')).length).toBeGreaterThan(10);
      expect(hostile.privateServer.log).toEqual([]);
    } finally {
      await hostile.stop();
    }
  });

  it('shows each lapse as its violation when it does not', async () => {
    const hostile = await startHostileWeb({
      kinds: ['robots-disallow', 'throttle-429', 'redirects', 'meta-robots', 'huge-page'],
      baseAddress: '127.1.44.1',
      privateAddress: '127.0.0.96',
      plainPages: 1,
      crawler: LIMITS,
    });
    try {
      await referenceCrawl(hostile, { ...DEFAULT_CRAWLER_LIMITS, ...LIMITS, maxRedirects: 10 }, { robots: false, retryAfter: false, ssrfGuard: false, nofollow: false, bodyCap: false, poisonSafe: true });
      expect(await hostile.settle()).toBe(true);
      const report = hostile.analyze();
      const found = (kind: string): string[] => [...new Set((report.byKind[kind as 'redirects'] ?? []).map((v) => v.check))].sort();
      expect(found('robots-disallow')).toEqual(['robots']);
      expect(found('throttle-429')).toEqual(['retry-after']);
      expect(found('redirects')).toEqual(['must-not-fetch']);
      expect(found('meta-robots')).toEqual(['must-not-fetch']);
      expect(found('huge-page')).toEqual(['must-not-fetch']);
      expect(found('private')).toEqual(['private']);
      expect(hostile.privateServer.log.map((e) => e.path)).toEqual(['/robots.txt', '/secret']);
      expect(report.byKind.redirects?.map((v) => new URL(v.url as string).pathname)).toEqual(
        expect.arrayContaining(['/r/long/6', '/r/long/7', '/r/long/final']),
      );
    } finally {
      await hostile.stop();
    }
  });

  it('gets through the poison hosts, and shows a crawler that retries what it cannot store', async () => {
    const hostile = await startHostileWeb({ kinds: POISON_KINDS, baseAddress: '127.1.45.1', privateAddress: '127.0.0.94', plainPages: 1, crawler: LIMITS });
    try {
      await referenceCrawl(hostile, { ...DEFAULT_CRAWLER_LIMITS, ...LIMITS }, POLITE, 40);
      expect(await hostile.settle()).toBe(true);
      expect(hostile.analyze().violations).toEqual([]);
      // It did go through the long link and the canonical page.
      expect(hostile.web.log.some((e) => e.path.length > 200_000 && e.status === 200)).toBe(true);
      const canonicalHost = hostile.expectation('poison-canonical').hostIndex;
      expect(hostile.web.log.filter((e) => e.hostIndex === canonicalHost && e.path === '/p/5')).toHaveLength(1);

      hostile.web.clearLog();
      await referenceCrawl(hostile, { ...DEFAULT_CRAWLER_LIMITS, ...LIMITS }, { ...POLITE, poisonSafe: false }, 40);
      expect(await hostile.settle()).toBe(true);
      const report = hostile.analyze();
      const limited = report.violations.filter((v) => v.check === 'request-limit').map((v) => new URL(v.url as string).pathname);
      expect(limited.sort()).toEqual(['/p/5', '/poison/base-nul', '/poison/bad-schemes', '/poison/canonical-nul', '/poison/description-nul', '/poison/refresh-nul', '/poison/title-nul'].sort());
      // Retried pages never got their links followed: the well-formed targets are missing.
      expect(report.violations.filter((v) => v.check === 'must-fetch').map((v) => new URL(v.url as string).pathname)).toEqual(
        expect.arrayContaining(['/ok/canonical-nul', '/ok/title-nul', '/p/6']),
      );
    } finally {
      await hostile.stop();
    }
  });
});
