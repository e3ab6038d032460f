import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeHostile } from './analyze-hostile.js';
import type { HostileWeb } from './hostile.js';
import { HOSTILE_KINDS, POISON_KINDS, startHostileWeb } from './hostile.js';
import { BAD_SCHEME_PREFIXES, LONG_URL_CHARS } from './hostile/presets-poison.js';
import type { RequestLogEntry } from './log.js';
import { httpGet } from './testing/http.js';

const strictUtf8 = (bytes: Buffer): string => new TextDecoder('utf-8', { fatal: true }).decode(bytes);

describe('the poison hosts', () => {
  let hostile: HostileWeb;
  const url = (kind: 'poison' | 'poison-canonical', path: string): string => `${hostile.expectation(kind).origin}${path}`;
  const page = async (kind: 'poison' | 'poison-canonical', path: string): Promise<Buffer> => {
    const reply = await httpGet(url(kind, path));
    expect({ path, status: reply.status, type: reply.headers['content-type'] }).toEqual({ path, status: 200, type: 'text/html; charset=utf-8' });
    return reply.body;
  };

  beforeAll(async () => {
    hostile = await startHostileWeb({ kinds: POISON_KINDS, baseAddress: '127.1.59.1', privateAddress: '127.0.0.95' });
  });
  afterAll(async () => {
    await hostile?.stop();
  });

  it('are opt-in: kinds of their own, not in HOSTILE_KINDS', () => {
    expect(POISON_KINDS).toEqual(['poison', 'poison-canonical']);
    for (const kind of POISON_KINDS) expect(HOSTILE_KINDS as readonly string[]).not.toContain(kind);
    expect(hostile.expectations.map((e) => e.kind)).toEqual(['poison', 'poison-canonical']);
  });

  it('serve NUL characters as raw bytes in canonical, title, description, base and refresh', async () => {
    const origin = hostile.expectation('poison').origin;
    const cases: [string, string][] = [
      ['/poison/canonical-nul', `<link rel="canonical" href="${origin}/a/1\u0000tail">`],
      ['/poison/title-nul', '<title>a title\u0000with a NUL</title>'],
      ['/poison/description-nul', '<meta name="description" content="before\u0000after">'],
      ['/poison/base-nul', `<base href="${origin}/poison/\u0000/">`],
      ['/poison/refresh-nul', `<meta http-equiv="refresh" content="0; url=${origin}/ok/refresh\u0000x">`],
    ];
    for (const [path, markup] of cases) {
      const body = await page('poison', path);
      expect(body.includes(0)).toBe(true);
      expect(strictUtf8(body)).toContain(markup);
      expect(strictUtf8(body)).toMatch(/<a href="[^"]*\/ok\/[a-z-]+">a well-formed link<\/a>/);
    }
  });

  it('serve lone surrogates as invalid UTF-8 bytes and as character references', async () => {
    const bytes = await page('poison', '/poison/surrogate-bytes');
    expect(bytes.includes(Buffer.from([0xed, 0xa0, 0x80]))).toBe(true);
    expect(bytes.includes(Buffer.from([0xed, 0xb0, 0x80]))).toBe(true);
    expect(() => strictUtf8(bytes)).toThrow(TypeError);
    const lenient = new TextDecoder('utf-8').decode(bytes);
    expect(lenient).toContain('<title>lone surrogate \uFFFD\uFFFD\uFFFD bytes</title>');
    const refs = strictUtf8(await page('poison', '/poison/surrogate-refs'));
    expect(refs).toContain('<title>lone surrogate &#xD800; reference</title>');
    expect(refs).toContain('&#56320;');
    expect(refs).toContain('href="/poison/ref&#xDC00;x"');
  });

  it('serve a 200 KB link, and log the request for it whole', async () => {
    const html = strictUtf8(await page('poison', '/poison/long-url'));
    const href = /<a href="(\/long\/a+)">/.exec(html)?.[1] as string;
    expect(href.length).toBe(LONG_URL_CHARS + '/long/'.length);
    const reply = await httpGet(url('poison', href));
    expect(reply.status).toBe(200);
    await hostile.web.idle();
    const entry = hostile.web.log.at(-1) as RequestLogEntry;
    expect(entry.path.length).toBe(href.length);
    expect(entry.status).toBe(200);
  });

  it('serve links with schemes and hosts a crawler must not fetch', async () => {
    const html = strictUtf8(await page('poison', '/poison/bad-schemes'));
    const hrefs = [...html.matchAll(/<a href="([^"]*)">bad<\/a>/g)].map((m) => m[1] as string);
    for (const start of ['javascript:', 'JaVaScRiPt:', 'java\tscript:', 'data:text/html,', 'data:text/html;base64,', 'vbscript:', 'file:///', 'file://', 'ftp://', 'ws://', 'wss://', 'http:///nohost', 'http://[::1', 'about:', 'blob:', 'view-source:']) {
      expect(hrefs.some((h) => h.startsWith(start)), start).toBe(true);
    }
    expect(hrefs).toContain('/ok/nul\u0000link');
    // The scheme targets on this host exist nowhere: fetching one is a crawler mistaking the scheme for http.
    for (const prefix of BAD_SCHEME_PREFIXES) expect((await httpGet(url('poison', `${prefix}1`))).status).toBe(404);
  });

  it('reproduce the known case: ten pages, /p/5 with a canonical to page 1, a NUL and "tail"', async () => {
    const origin = hostile.expectation('poison-canonical').origin;
    const paths = ['/', ...Array.from({ length: 9 }, (_, i) => `/p/${i + 1}`)];
    for (const [i, path] of paths.entries()) {
      const html = strictUtf8(await page('poison-canonical', path));
      const next = paths[i + 1];
      if (next !== undefined) expect(html).toContain(`<a href="${next}">`);
      expect(html.includes(`<link rel="canonical" href="${origin}/p/1\u0000tail">`)).toBe(path === '/p/5');
    }
    const e = hostile.expectation('poison-canonical');
    expect(e.mustFetch).toEqual(paths.map((p) => `${origin}${p}`));
    expect(e.limits).toEqual(paths.map((p) => ({ url: `${origin}${p}`, match: 'exact', maxRequests: 1 })));
  });

  it('expect every page fetched exactly once, bad-scheme targets never, the long URL at most once', () => {
    const e = hostile.expectation('poison');
    const origin = e.origin;
    expect(e.mustFetch).toEqual(expect.arrayContaining([`${origin}/`, `${origin}/a/1`, `${origin}/poison/canonical-nul`, `${origin}/ok/canonical-nul`, `${origin}/ok/bad-schemes`]));
    expect(e.mustFetch).toHaveLength(1 + 3 + 9 + 9);
    expect(e.mustNotFetchPrefixes).toEqual(BAD_SCHEME_PREFIXES.map((p) => `${origin}${p}`));
    expect(e.limits.filter((l) => l.maxRequests === 1 && l.match === 'exact').map((l) => l.url)).toEqual(e.mustFetch);
    expect(e.limits.at(-1)).toEqual({ url: `${origin}/long/`, match: 'prefix', maxRequests: 1 });
  });

  it('flag a page fetched twice, and a bad-scheme target fetched at all', () => {
    const e = hostile.expectation('poison-canonical');
    const host = new URL(e.origin).host;
    let t = 1_000;
    const entry = (path: string): RequestLogEntry => ({ host, hostIndex: e.hostIndex, method: 'GET', path, pageKey: path, start: (t += 200), end: t + 10, status: 200, bytes: 100, userAgent: 'x' });
    const paths = ['/robots.txt', '/', ...Array.from({ length: 9 }, (_, i) => `/p/${i + 1}`)];
    expect(analyzeHostile(paths.map(entry), [e]).violations).toEqual([]);
    const retried = analyzeHostile([...paths.map(entry), entry('/p/5')], [e]);
    expect(retried.counts).toEqual({ 'request-limit': 1, duplicate: 1 });
    expect(retried.violations.map((v) => [v.check, v.url])).toEqual(expect.arrayContaining([['request-limit', `${e.origin}/p/5`], ['duplicate', `${e.origin}/p/5`]]));

    const p = hostile.expectation('poison');
    const poisonHost = new URL(p.origin).host;
    const bad = { host: poisonHost, hostIndex: p.hostIndex, method: 'GET', path: '/ftp/1', pageKey: null, start: 5000, end: 5001, status: 404, bytes: 10, userAgent: 'x' };
    expect(analyzeHostile([bad], [p]).counts['must-not-fetch']).toBe(1);
  });
});
