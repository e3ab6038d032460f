import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemorySubresourceCache } from '../cache.js';
import { needsRendering } from '../classify.js';
import { compareYields } from '../learner.js';
import { RenderErrorCode } from '../errors.js';
import { plainFetch, type SpaSite, startSpaSite } from '../testing/index.js';
import type { RenderFetch, RenderResult, SubrequestRecord } from '../types.js';
import { ChromiumRenderer } from './renderer.js';

// Debian's chromium through playwright-core, on loopback against a small SPA site. One renderer for
// the file; its pool recycles its browser every PAGES_PER_BROWSER pages, which the last test checks.
const PAGES_PER_BROWSER = 6;

let site: SpaSite;
let renderer: ChromiumRenderer;
/** Paths the caller's fetch asked the site for: the only way anything may reach it. */
const fetched: string[] = [];
let openAtFetch = 0;

const fetchThrough: RenderFetch = async (url, request) => {
  fetched.push(new URL(url).pathname);
  openAtFetch = Math.max(openAtFetch, renderer.stats().pagesOpen);
  return plainFetch(url, request);
};
/** The test's own fetches (the document handed in, the hook's body), counted the same way. */
const fetchHere = (path: string, resourceType = 'document'): ReturnType<RenderFetch> =>
  fetchThrough(site.url(path), { resourceType, method: 'GET', headers: {}, signal: AbortSignal.timeout(5000) });
/** What reached the site since a mark. */
const logSince = (mark: number): string[] => site.log.slice(mark);

const byPath = (result: RenderResult, path: string): SubrequestRecord | undefined => result.requests.find((r) => new URL(r.url).pathname === path);
/** The links of a page, as a crawler reading its HTML would find them (a script's markup strings are not links). */
const hrefs = (html: string): string[] => [...html.replace(/<script\b[\s\S]*?<\/script>/g, '').matchAll(/<a href="([^"]+)"/g)].map((m) => m[1] as string);

beforeAll(async () => {
  site = await startSpaSite();
  renderer = new ChromiumRenderer({ pool: { maxOpenPages: 2, pagesPerBrowser: PAGES_PER_BROWSER, memoryCheckEveryMs: 0, maxBrowserMemoryBytes: 8 * 1024 ** 3 }, idleMs: 50, timeoutMs: 10_000 });
}, 60_000);

afterAll(async () => {
  await renderer?.close();
  await site?.close();
}, 60_000);

describe('ChromiumRenderer', () => {
  const cache = new MemorySubresourceCache();

  it('renders an SPA shell: the links its script builds from /data/1.json are in the DOM; images and other hosts are refused', async () => {
    const shell = await fetchHere('/spa/1');
    const mark = site.log.length;
    expect(needsRendering(shell.body.toString(), site.url('/spa/1'))).toMatchObject({ render: true, reason: 'empty-app-root' });

    const result = await renderer.render(site.url('/spa/1'), { fetch: fetchThrough, document: shell, cache });

    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.status).toBe(200);
    expect(result.finalUrl).toBe(site.url('/spa/1'));
    expect(hrefs(result.html)).toEqual(['/spa/2', '/item/1-1', '/item/1-2']);
    expect(byPath(result, '/spa/1')).toMatchObject({ resourceType: 'document', outcome: 'supplied', status: 200 });
    expect(byPath(result, '/static/app.js')).toMatchObject({ resourceType: 'script', outcome: 'fetched', status: 200 });
    expect(byPath(result, '/data/1.json')).toMatchObject({ resourceType: 'fetch', outcome: 'fetched', status: 200 });
    expect(byPath(result, '/static/logo.png')).toMatchObject({ resourceType: 'image', outcome: 'blocked', reason: 'resource-type:image' });
    expect(result.requests.find((r) => r.url.startsWith('http://cdn.elsewhere.test/'))).toMatchObject({ outcome: 'blocked', reason: 'other-host' });
    // The document was not fetched twice; the image never left the browser.
    expect(logSince(mark)).toEqual(['/static/app.js', '/data/1.json']);
    expect(result.timings.totalMs).toBeGreaterThan(0);
  });

  it('serves the same script to the next page from the crawl\'s cache', async () => {
    const mark = site.log.length;
    const result = await renderer.render(site.url('/spa/2'), { fetch: fetchThrough, cache });
    expect(result.ok && hrefs(result.html)).toEqual(['/spa/3', '/item/2-1', '/item/2-2']);
    expect(byPath(result, '/spa/2')).toMatchObject({ outcome: 'fetched', status: 200 });
    expect(byPath(result, '/static/app.js')).toMatchObject({ outcome: 'cached', status: 200 });
    expect(logSince(mark)).toEqual(['/spa/2', '/data/2.json']);
    expect(cache.hits).toBe(1);
    // Same host: the page of the first render was kept and navigated again.
    expect(renderer.stats().pagesReused).toBeGreaterThanOrEqual(1);
  });

  it('follows a redirect the caller\'s fetch returns, through the hook again', async () => {
    const result = await renderer.render(site.url('/old/7'), { fetch: fetchThrough, cache });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.status).toBe(200);
    expect(result.finalUrl).toBe(site.url('/spa/7'));
    expect(result.requests.filter((r) => r.resourceType === 'document').map((r) => [new URL(r.url).pathname, r.status, r.location])).toEqual([
      ['/old/7', 301, site.url('/spa/7')],
      ['/spa/7', 200, undefined],
    ]);
    expect(hrefs(result.html)).toContain('/item/7-1');
  });

  it('finds the links a hybrid page\'s inline script adds, which the learner counts as a gain', async () => {
    const plain = await fetchHere('/hybrid');
    const html = plain.body.toString();
    expect(needsRendering(html, site.url('/hybrid'))).toMatchObject({ render: true, reason: 'script-builds-links' });
    const result = await renderer.render(site.url('/hybrid'), { fetch: fetchThrough, document: plain });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const comparison = compareYields({ links: hrefs(html), textChars: html.length }, { links: hrefs(result.html), textChars: result.html.length });
    expect(comparison).toMatchObject({ extraLinks: 3, plainLinks: 2, gained: true });
  });

  it('asks the SSRF check and the caller\'s hook before any fetch', async () => {
    const mark = site.log.length;
    const result = await renderer.render(site.url('/spa/3'), {
      fetch: fetchThrough,
      cache,
      ssrfCheck: async (url) => (url.pathname.startsWith('/data/') ? 'ssrf:private' : null),
      // The caller answers scripts itself (its own store, say): the hook's body is handed to the page.
      beforeRequest: async (url, type) => (type === 'script' ? { allow: true, body: await fetchHere(new URL(url).pathname, type) } : { allow: true }),
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(byPath(result, '/static/app.js')).toMatchObject({ outcome: 'supplied' });
    expect(byPath(result, '/data/3.json')).toMatchObject({ outcome: 'blocked', reason: 'ssrf:private' });
    expect(hrefs(result.html)).toEqual([]);
    expect(logSince(mark)).toEqual(['/spa/3', '/static/app.js']); // the hook's own fetch of the script
  });

  it('a page that never settles ends in ERR_RENDER_TIMEOUT, and the next render still works', async () => {
    const started = performance.now();
    const result = await renderer.render(site.url('/slow'), { fetch: fetchThrough, timeoutMs: 1500 });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code as string).toBe(RenderErrorCode.Timeout);
    expect(result.error.action).toBe('retry');
    expect(performance.now() - started).toBeLessThan(5000);
    expect(byPath(result, '/static/hang.js')).toMatchObject({ outcome: 'failed', reason: 'render-ended' });
    const next = await renderer.render(site.url('/spa/4'), { fetch: fetchThrough, cache });
    expect(next.ok && hrefs(next.html)).toEqual(['/spa/5', '/item/4-1', '/item/4-2']);
  });

  it('keeps at most maxOpenPages open, queues the rest, and recycles the browser after pagesPerBrowser pages', async () => {
    const before = renderer.stats();
    const results = await Promise.all([5, 6, 8, 9, 10].map((n) => renderer.render(site.url(`/spa/${n}`), { fetch: fetchThrough, cache })));
    expect(results.map((r) => (r.ok ? hrefs(r.html)[1] : `${r.error.code}: ${r.error.message}`))).toEqual(['/item/5-1', '/item/6-1', '/item/8-1', '/item/9-1', '/item/10-1']);
    expect(openAtFetch).toBeLessThanOrEqual(2);
    expect(results.some((r) => r.timings.queuedMs > 50)).toBe(true);
    const after = renderer.stats();
    expect(after.pagesRendered - before.pagesRendered).toBe(5);
    // 12 pages so far at 6 per browser: two browsers retired for their page count, the third not yet used.
    expect(after.browsersLaunched).toBe(2);
    expect(after.retiredFor).toEqual({ pages: 2 });
    expect(after.memoryReadable).toBe(true);
    expect(after.lastMemory).toMatchObject({ measure: 'pss' });
    expect(after.lastMemory?.bytes).toBeGreaterThan(10 * 1024 * 1024);
  });

  it('follows a script\'s navigation, and takes a handed-in document for a URL with a fragment', async () => {
    const document = await fetchHere('/go/13');
    const result = await renderer.render(site.url('/go/13#list'), { fetch: fetchThrough, document, cache });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.finalUrl).toBe(site.url('/spa/13#list'));
    expect(hrefs(result.html)).toEqual(['/spa/14', '/item/13-1', '/item/13-2']);
    expect(result.requests.filter((r) => r.resourceType === 'document').map((r) => [new URL(r.url).pathname, r.outcome])).toEqual([
      ['/go/13', 'supplied'],
      ['/spa/13', 'fetched'],
    ]);
  });

  it('closes gracefully: the render under way finishes, later ones are refused with ERR_RENDER_CLOSED', async () => {
    const underWay = renderer.render(site.url('/spa/11'), { fetch: fetchThrough, cache });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closed = renderer.close();
    const late = await renderer.render(site.url('/spa/12'), { fetch: fetchThrough, cache });
    expect(late.ok === false && (late.error.code as string)).toBe(RenderErrorCode.Closed);
    const result = await underWay;
    expect(result.ok && hrefs(result.html)).toEqual(['/spa/12', '/item/11-1', '/item/11-2']);
    await closed;
    expect(renderer.stats().pagesOpen).toBe(0);
  });

  it('never lets the browser connect by itself: the site saw only what the caller fetched', () => {
    // /static/hang.js was asked for and never answered: it is in both lists too.
    expect([...site.log].sort()).toEqual([...fetched].sort());
    expect(site.log).not.toContain('/static/logo.png');
  });
});
