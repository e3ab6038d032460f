import { gunzipSync } from 'node:zlib';
import { ManualClock } from '@trawl/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeLog } from './analyze.js';
import { ChangeSchedule, httpDate, notModified } from './changes.js';
import type { RequestLogEntry } from './log.js';
import { httpGet, pageLinks } from './testing/http.js';
import { TestWeb } from './testweb.js';

const EPOCH = 1_700_000_000_000;

describe('ChangeSchedule', () => {
  it('counts a version per interval since the epoch', () => {
    const schedule = new ChangeSchedule(1, { everyMs: 1000, epoch: 10_000 }, 0);
    const at = (t: number): [number, number] => {
      const s = schedule.state(0, 1, t);
      return [s.version, s.changedAt];
    };
    expect(at(5_000)).toEqual([0, 10_000]);
    expect(at(10_000)).toEqual([0, 10_000]);
    expect(at(10_999)).toEqual([0, 10_000]);
    expect(at(11_000)).toEqual([1, 11_000]);
    expect(at(15_500)).toEqual([5, 15_000]);
  });

  it('adds touches to the natural changes, from the moment of each touch', () => {
    const schedule = new ChangeSchedule(1, { everyMs: 1000, epoch: 10_000 }, 0);
    const before = schedule.state(0, 1, 12_300);
    expect(schedule.touch(0, 1, 12_300)).toMatchObject({ version: 3, changedAt: 12_300 });
    expect(schedule.state(0, 1, 12_299)).toMatchObject({ version: 2, changedAt: 12_000 });
    expect(schedule.state(0, 1, 12_300).etag).not.toBe(before.etag);
    expect(schedule.state(0, 1, 13_000)).toMatchObject({ version: 4, changedAt: 13_000 });
    // Another page is untouched.
    expect(schedule.state(0, 2, 12_300)).toMatchObject({ version: 2, changedAt: 12_000 });
    // A page that never changes on its own changes only by touch.
    const still = new ChangeSchedule(1, { everyMs: null, epoch: 10_000 }, 0);
    still.touch(3, 4, 20_000);
    expect(still.state(3, 4, 19_999)).toMatchObject({ version: 0, changedAt: 10_000 });
    expect(still.state(3, 4, 99_999)).toMatchObject({ version: 1, changedAt: 20_000 });
  });

  it('gives one ETag per version of a page, different across pages and versions', () => {
    const schedule = new ChangeSchedule(7, { everyMs: 1000, epoch: 0 }, 0);
    expect(schedule.state(1, 2, 500).etag).toBe(schedule.state(1, 2, 900).etag);
    expect(schedule.state(1, 2, 500).etag).toMatch(/^"[0-9a-f]{8}-0"$/);
    const tags = new Set([0, 1000, 2000].flatMap((t) => [schedule.state(1, 2, t).etag, schedule.state(1, 3, t).etag, schedule.state(2, 2, t).etag]));
    expect(tags.size).toBe(9);
  });

  it('takes per-page intervals from a function, and floors the default epoch to a second', () => {
    const schedule = new ChangeSchedule(1, { everyMs: (host, page) => (host === 0 ? 500 * (page + 1) : null) }, 12_345);
    expect(schedule.epoch).toBe(12_000);
    expect(schedule.intervalMs(0, 0)).toBe(500);
    expect(schedule.intervalMs(0, 3)).toBe(2000);
    expect(schedule.intervalMs(1, 3)).toBeNull();
    expect(schedule.state(0, 3, 16_000).version).toBe(2);
  });

  it('draws pages into classes by weight', () => {
    const schedule = new ChangeSchedule(3, { classes: [{ name: 'fast', everyMs: 1000, weight: 1 }, { name: 'slow', everyMs: 60_000, weight: 3 }, { name: 'static', everyMs: null, weight: 6 }] }, 0);
    const counts: Record<string, number> = {};
    for (let page = 0; page < 10_000; page++) {
      const c = schedule.classOf(page % 7, page);
      counts[c?.name ?? ''] = (counts[c?.name ?? ''] ?? 0) + 1;
      expect(schedule.intervalMs(page % 7, page)).toBe(c?.everyMs);
    }
    expect(counts.fast).toBeGreaterThan(800);
    expect(counts.fast).toBeLessThan(1200);
    expect(counts.slow).toBeGreaterThan(2700);
    expect(counts.slow).toBeLessThan(3300);
    expect(counts.static).toBeGreaterThan(5600);
    expect(counts.static).toBeLessThan(6400);
    expect(schedule.classOf(2, 9)).toEqual(new ChangeSchedule(3, { classes: [{ name: 'fast', everyMs: 1000, weight: 1 }, { name: 'slow', everyMs: 60_000, weight: 3 }, { name: 'static', everyMs: null, weight: 6 }] }, 0).classOf(2, 9));
  });

  it('refuses impossible options with ERR_TESTWEB_OPTIONS', () => {
    expect(() => new ChangeSchedule(1, { everyMs: 0 }, 0)).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_OPTIONS' }));
    expect(() => new ChangeSchedule(1, { classes: [] }, 0)).toThrow(/classes must not be empty/);
    expect(() => new ChangeSchedule(1, { classes: [{ name: 'a', everyMs: 1 }, { name: 'a', everyMs: 2 }] }, 0)).toThrow(/distinct/);
    expect(() => new ChangeSchedule(1, { classes: [{ name: 'a', everyMs: 1, weight: 0 }] }, 0)).toThrow(/weight/);
    const bad = new ChangeSchedule(1, { everyMs: () => -5 }, 0);
    expect(() => bad.state(0, 0, 0)).toThrow(/everyMs\(0, 0\)/);
  });
});

describe('notModified (RFC 9110 §13.1)', () => {
  const etag = '"abc-1"';
  const lastModified = Date.UTC(2024, 0, 2, 3, 4, 5, 600);
  const cases: [string, { ifNoneMatch?: string; ifModifiedSince?: string }, boolean][] = [
    ['no condition', {}, false],
    ['If-None-Match equal', { ifNoneMatch: '"abc-1"' }, true],
    ['If-None-Match weak form of it', { ifNoneMatch: 'W/"abc-1"' }, true],
    ['If-None-Match in a list', { ifNoneMatch: '"x", "abc-1" , "y"' }, true],
    ['If-None-Match *', { ifNoneMatch: '*' }, true],
    ['If-None-Match other', { ifNoneMatch: '"abc-0"' }, false],
    ['If-None-Match decides over If-Modified-Since', { ifNoneMatch: '"abc-0"', ifModifiedSince: httpDate(lastModified + 60_000) }, false],
    ['If-Modified-Since equal to Last-Modified (whole seconds)', { ifModifiedSince: httpDate(lastModified) }, true],
    ['If-Modified-Since later', { ifModifiedSince: httpDate(lastModified + 5000) }, true],
    ['If-Modified-Since a second earlier', { ifModifiedSince: httpDate(lastModified - 1000) }, false],
    ['If-Modified-Since not a date', { ifModifiedSince: 'yesterday' }, false],
  ];
  it.each(cases)('%s', (_name, headers, expected) => {
    expect(notModified(headers, etag, lastModified)).toBe(expected);
  });
});

/** Anchors of a page, in order: the link graph as a crawler sees it. */
const anchorsOf = (html: string, url: string): string[] => pageLinks(html, url);
/** The text of the page's padding or article paragraphs. */
const paragraphs = (html: string): string => [...html.matchAll(/<p>([^<]*)<\/p>/g)].map((m) => m[1]).join('\n');

describe('a changing web over HTTP', () => {
  const clock = new ManualClock(EPOCH + 400);
  let web: TestWeb;

  beforeAll(async () => {
    web = await TestWeb.start({
      hosts: 2,
      pagesPerHost: 10,
      linksPerPage: 3,
      crossHostLinks: 1,
      seed: 3,
      baseAddress: '127.1.50.1',
      now: () => clock.now(),
      changes: { everyMs: (host) => (host === 0 ? 2000 : null) },
    });
  });
  afterAll(async () => {
    await web?.stop();
  });

  async function last(): Promise<RequestLogEntry> {
    await web.idle();
    return web.log.at(-1) as RequestLogEntry;
  }

  it('serves ETag, Last-Modified and Date from its clock, and answers conditional GETs with 304', async () => {
    expect(web.epoch).toBe(EPOCH);
    const url = web.pageUrl(0, 1);
    const first = await httpGet(url);
    expect(first.status).toBe(200);
    expect(first.headers['last-modified']).toBe(httpDate(EPOCH));
    expect(first.headers.date).toBe(httpDate(EPOCH + 400));
    expect(first.headers.etag).toBe(web.pageState(url).etag);
    expect(first.body.toString('utf8')).toBe(web.html(0, 1));
    expect(await last()).toMatchObject({ conditional: false, version: 0, resource: 'page', status: 200 });

    const byTag = await httpGet(url, { headers: { 'if-none-match': first.headers.etag as string } });
    expect(byTag.status).toBe(304);
    expect(byTag.body.byteLength).toBe(0);
    expect(byTag.headers.etag).toBe(first.headers.etag);
    expect(await last()).toMatchObject({ conditional: true, notModified: true, status: 304, bytes: 0, version: 0 });

    const byDate = await httpGet(url, { headers: { 'if-modified-since': first.headers['last-modified'] as string } });
    expect(byDate.status).toBe(304);
    expect(await last()).toMatchObject({ conditional: true, notModified: true });
    // HEAD is conditional too.
    expect((await httpGet(url, { method: 'HEAD', headers: { 'if-none-match': first.headers.etag as string } })).status).toBe(304);
  });

  it('changes the text, never the links, once the interval has passed', async () => {
    const url = web.pageUrl(0, 2);
    const before = await httpGet(url);
    clock.advance(2000);
    expect(web.pageVersion(url)).toBe(1);
    const after = await httpGet(url, { headers: { 'if-none-match': before.headers.etag as string, 'if-modified-since': before.headers['last-modified'] as string } });
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(after.headers['last-modified']).toBe(httpDate(EPOCH + 2000));
    expect(await last()).toMatchObject({ conditional: true, notModified: false, version: 1, status: 200 });
    const [old, now] = [before.body.toString('utf8'), after.body.toString('utf8')];
    expect(now).not.toBe(old);
    expect(paragraphs(now)).not.toBe(paragraphs(old));
    expect(anchorsOf(now, url)).toEqual(anchorsOf(old, url));
    // The old date alone says changed too.
    expect((await httpGet(url, { headers: { 'if-modified-since': before.headers['last-modified'] as string } })).status).toBe(200);
    // The ground truth does not move.
    expect(web.groundTruth(web.rootUrls())).toEqual(new Set(Array.from({ length: 20 }, (_, i) => web.pageUrl(i % 2, Math.floor(i / 2)))));
  });

  it('keeps pages that never change at version 0, and exposes every page\'s interval', async () => {
    clock.advance(10_000);
    const still = web.pageUrl(1, 4);
    const reply = await httpGet(still);
    expect(reply.headers['last-modified']).toBe(httpDate(EPOCH));
    expect((await httpGet(still, { headers: { 'if-none-match': reply.headers.etag as string } })).status).toBe(304);
    expect(web.changeIntervalMs(still)).toBeNull();
    expect(web.changeIntervalMs(web.pageUrl(0, 4))).toBe(2000);
    expect(web.pageVersion(web.pageUrl(0, 4))).toBe(6);
    expect(web.pageVersion(web.pageUrl(0, 4), EPOCH + 1999)).toBe(0);
    // Any link form of the page names the same page.
    expect(web.pageVersion(`${web.origins[0]}/x/../p/%34?utm_source=a`)).toBe(6);
    expect(web.changeClassOf(still)).toBeNull();
    expect(() => web.pageVersion(`${web.origins[0]}/nothing`)).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_RANGE' }));
  });

  it('touch() changes a page now: new ETag, Last-Modified now, 200 to the old validators', async () => {
    const url = web.pageUrl(1, 5);
    const before = await httpGet(url);
    clock.advance(1234);
    const touched = web.touch(url);
    expect(touched).toMatchObject({ version: 1, changedAt: clock.now() });
    const after = await httpGet(url, { headers: { 'if-none-match': before.headers.etag as string } });
    expect(after.status).toBe(200);
    expect(after.headers.etag).toBe(touched.etag);
    expect(after.headers['last-modified']).toBe(httpDate(clock.now()));
    expect(after.body.toString('utf8')).not.toBe(before.body.toString('utf8'));
    expect(anchorsOf(after.body.toString('utf8'), url)).toEqual(anchorsOf(before.body.toString('utf8'), url));
  });
});

describe('a static web', () => {
  it('sends no validators and answers conditional requests in full, logging them as conditional', async () => {
    const web = await TestWeb.start({ hosts: 1, pagesPerHost: 3, linksPerPage: 1, crossHostLinks: 0, baseAddress: '127.1.51.1' });
    try {
      const reply = await httpGet(web.pageUrl(0, 1), { headers: { 'if-none-match': '*' } });
      expect(reply.status).toBe(200);
      expect(reply.headers.etag).toBeUndefined();
      expect(reply.headers['last-modified']).toBeUndefined();
      await web.idle();
      expect(web.log[0]).toMatchObject({ conditional: true, status: 200, version: 0 });
      expect(web.log[0]?.notModified).toBeUndefined();
    } finally {
      await web.stop();
    }
  });
});

/** `<loc>`/`<lastmod>` pairs of a sitemap, unescaped. */
function sitemapEntries(xml: string, tag: 'url' | 'sitemap'): { loc: string; lastmod: string }[] {
  return [...xml.matchAll(new RegExp(`<${tag}><loc>([^<]*)</loc><lastmod>([^<]*)</lastmod></${tag}>`, 'g'))].map((m) => ({
    loc: (m[1] as string).replace(/&amp;/g, '&'),
    lastmod: m[2] as string,
  }));
}

describe('sitemaps', () => {
  const clock = new ManualClock(EPOCH);
  let web: TestWeb;

  beforeAll(async () => {
    web = await TestWeb.start({
      hosts: 3,
      pagesPerHost: 10,
      linksPerPage: 2,
      crossHostLinks: 1,
      seed: 4,
      baseAddress: '127.1.52.1',
      now: () => clock.now(),
      changes: { everyMs: (_host, page) => (page % 2 === 0 ? 3000 : null) },
      sitemaps: { hosts: [0, 1], index: [1], children: 3 },
    });
  });
  afterAll(async () => {
    await web?.stop();
  });

  const pages = (host: number): string[] => Array.from({ length: 10 }, (_, p) => web.pageUrl(host, p));

  it('announces each host\'s sitemap in robots.txt', async () => {
    expect((await httpGet(`${web.origins[0]}/robots.txt`)).body.toString()).toBe(`User-agent: *\nAllow: /\nSitemap: ${web.origins[0]}/sitemap.xml\n`);
    expect((await httpGet(`${web.origins[1]}/robots.txt`)).body.toString()).toContain(`\nSitemap: ${web.origins[1]}/sitemap_index.xml\n`);
    expect((await httpGet(`${web.origins[2]}/robots.txt`)).body.toString()).not.toContain('Sitemap:');
    expect((await httpGet(`${web.origins[2]}/sitemap.xml`)).status).toBe(404);
    expect((await httpGet(`${web.origins[0]}/sitemap_index.xml`)).status).toBe(404);
    expect([0, 1, 2].map((h) => web.sitemapUrl(h))).toEqual([`${web.origins[0]}/sitemap.xml`, `${web.origins[1]}/sitemap_index.xml`, null]);
  });

  it('lists every page with its last change as lastmod, and moves lastmod when pages change or are touched', async () => {
    const read = async (): Promise<{ loc: string; lastmod: string }[]> => {
      const reply = await httpGet(`${web.origins[0]}/sitemap.xml`);
      expect(reply.headers['content-type']).toBe('application/xml; charset=utf-8');
      const xml = reply.body.toString('utf8');
      expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<urlset xmlns="http:\/\/www.sitemaps.org\/schemas\/sitemap\/0.9">/);
      expect(xml).toContain('&amp;b='); // query pages' & is escaped
      return sitemapEntries(xml, 'url');
    };
    const at = (ms: number): string => new Date(ms).toISOString();
    expect(await read()).toEqual(pages(0).map((loc) => ({ loc, lastmod: at(EPOCH) })));
    clock.advance(3500);
    expect((await read()).map((e) => e.lastmod)).toEqual(pages(0).map((_, p) => at(p % 2 === 0 ? EPOCH + 3000 : EPOCH)));
    clock.advance(250);
    web.touch(web.pageUrl(0, 3));
    const touched = (await read())[3];
    expect(touched).toEqual({ loc: web.pageUrl(0, 3), lastmod: at(EPOCH + 3750) });
    expect(touched?.lastmod).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.750Z$/);
    expect(web.pageState(web.pageUrl(0, 3)).changedAt).toBe(EPOCH + 3750);
  });

  it('splits an index host into child sitemaps, the last one gzip-compressed', async () => {
    const index = await httpGet(`${web.origins[1]}/sitemap_index.xml`);
    const xml = index.body.toString('utf8');
    expect(xml).toContain('<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">');
    const children = sitemapEntries(xml, 'sitemap');
    expect(children.map((c) => new URL(c.loc).pathname)).toEqual(['/sitemap-1.xml', '/sitemap-2.xml', '/sitemap-3.xml.gz']);
    const listed: string[] = [];
    for (const child of children) {
      const reply = await httpGet(child.loc);
      expect(reply.status).toBe(200);
      let body = reply.body;
      if (child.loc.endsWith('.gz')) {
        expect(reply.headers['content-type']).toBe('application/gzip');
        expect([body[0], body[1]]).toEqual([0x1f, 0x8b]);
        body = gunzipSync(body);
      } else expect(reply.headers['content-type']).toBe('application/xml; charset=utf-8');
      const entries = sitemapEntries(body.toString('utf8'), 'url');
      expect(entries.length).toBeGreaterThan(0);
      // The index's lastmod of a child is the latest of its pages'.
      expect(child.lastmod).toBe(entries.map((e) => e.lastmod).sort().at(-1));
      listed.push(...entries.map((e) => e.loc));
    }
    expect(listed).toEqual(pages(1));
    expect((await httpGet(`${web.origins[1]}/sitemap-3.xml`)).status).toBe(404);
    expect((await httpGet(`${web.origins[1]}/sitemap-4.xml`)).status).toBe(404);
  });

  it('logs sitemap requests as such, outside coverage and duplicates', async () => {
    await httpGet(`${web.origins[0]}/sitemap.xml`);
    await web.idle();
    const entries = web.log.filter((e) => e.resource === 'sitemap');
    expect(entries.length).toBeGreaterThanOrEqual(8);
    const analysis = analyzeLog(web.log, { minIntervalMs: 0, expected: new Set(), ignorePaths: ['/robots.txt'] });
    expect(analysis.sitemapRequests).toBe(entries.length);
    // Only the 404s for sitemaps that do not exist are unexpected requests.
    expect(analysis.coverage?.unexpected.filter((u) => u.includes('sitemap')).sort()).toEqual(
      [`${web.origins[0]}/sitemap_index.xml`, `${web.origins[1]}/sitemap-3.xml`, `${web.origins[1]}/sitemap-4.xml`, `${web.origins[2]}/sitemap.xml`].sort(),
    );
    expect(analysis.duplicates.pages.filter((d) => d.pageKey.includes('sitemap'))).toEqual([]);
  });
});
