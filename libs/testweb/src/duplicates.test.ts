import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeLog } from './analyze.js';
import type { DuplicateInfo } from './duplicates.js';
import type { Reply } from './testing/http.js';
import { canonical, httpGet, miniCrawl } from './testing/http.js';
import { TestWeb } from './testweb.js';

/** Lower-cased words of the visible text (head and tags dropped). */
function words(html: string): string[] {
  const body = html.replace(/^[\s\S]*?<\/head>/, '').replace(/<[^>]*>/g, ' ').replace(/&amp;/g, '&');
  return body.toLowerCase().match(/[a-z0-9,.'?-]+/g) ?? [];
}
const article = (html: string): string => /<article>([\s\S]*)<\/article>/.exec(html)?.[1] ?? '';

function shingles(tokens: readonly string[], k = 3): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i + k <= tokens.length; i++) out.add(tokens.slice(i, i + k).join(' '));
  return out;
}
function jaccard(a: Set<string>, b: Set<string>): number {
  let common = 0;
  for (const s of a) if (b.has(s)) common++;
  return common / (a.size + b.size - common);
}
const similarity = (a: string, b: string): number => jaccard(shingles(words(a)), shingles(words(b)));

/** Share of a's words (as a bag) that b lacks. */
function bagDifference(a: readonly string[], b: readonly string[]): number {
  const counts = new Map<string, number>();
  for (const w of b) counts.set(w, (counts.get(w) ?? 0) + 1);
  let missing = 0;
  for (const w of a) {
    const n = counts.get(w) ?? 0;
    if (n === 0) missing++;
    else counts.set(w, n - 1);
  }
  return missing / a.length;
}

describe('planted duplicates', () => {
  let web: TestWeb;
  let truth: Map<string, DuplicateInfo>;
  const bodies = new Map<string, Reply>();
  const body = async (url: string): Promise<string> => {
    let reply = bodies.get(url);
    if (reply === undefined) bodies.set(url, (reply = await httpGet(url)));
    expect({ url, status: reply.status, type: reply.headers['content-type'] }).toEqual({ url, status: 200, type: 'text/html; charset=utf-8' });
    return reply.body.toString('utf8');
  };

  beforeAll(async () => {
    web = await TestWeb.start({
      hosts: 3,
      pagesPerHost: 30,
      linksPerPage: 3,
      crossHostLinks: 1,
      seed: 11,
      baseAddress: '127.1.53.1',
      duplicates: { share: 0.5, mirrors: [1] },
    });
    truth = web.duplicateTruth();
  });
  afterAll(async () => {
    await web?.stop();
  });

  it('plants every kind of variant, and mirrors a host after the others', () => {
    expect(web.mirrorHosts()).toEqual([3]);
    expect(web.origins).toHaveLength(4);
    expect(web.describe()).toMatchObject({ mirrorHosts: [3], extraHosts: 0, totalPages: 120, seeds: [`${web.origins[0]}/`, `${web.origins[3]}/`] });
    const kinds = new Map<string, number>();
    for (const info of truth.values()) kinds.set(`${info.variant ?? 'page'}/${info.relation}/${info.mirror}`, (kinds.get(`${info.variant ?? 'page'}/${info.relation}/${info.mirror}`) ?? 0) + 1);
    for (const key of ['page/original/false', 'page/exact/true', 'near/near/false', 'print/near/false', 'session-path/exact/false', 'session-query/exact/false', 'near/near/true']) {
      expect(kinds.get(key), key).toBeGreaterThan(0);
    }
    // Every page of the mirrored host is a cluster; about half the pages of the others.
    const originals = [...truth.values()].filter((i) => i.relation === 'original');
    expect(originals.filter((i) => i.cluster.startsWith(web.origins[1] as string))).toHaveLength(30);
    const others = originals.filter((i) => !i.cluster.startsWith(web.origins[1] as string)).length;
    expect(others).toBeGreaterThan(18);
    expect(others).toBeLessThan(42);
    for (const [url, info] of truth) expect(truth.get(info.cluster)?.relation, url).toBe('original');
  });

  it('serves exact duplicates byte for byte, and near ones with the same article in other bytes', async () => {
    let near = 0;
    for (const [url, info] of truth) {
      const html = await body(url);
      if (info.relation === 'original') continue;
      const original = await body(info.cluster);
      if (info.relation === 'exact') {
        expect(html, url).toBe(original);
        continue;
      }
      near++;
      expect(html, url).not.toBe(original);
      expect(similarity(html, original), url).toBeGreaterThan(0.6);
      if (info.variant === 'print') {
        expect(article(html), url).toBe(article(original));
        expect(html).toContain('Printer-friendly version');
      } else {
        const [a, b] = [words(article(original)), words(article(html))];
        expect(a.length).toBeGreaterThan(250);
        expect(b.length).toBe(a.length);
        const changed = bagDifference(a, b);
        expect(changed, url).toBeGreaterThan(0.004);
        expect(changed, url).toBeLessThan(0.03);
        expect(jaccard(shingles(a), shingles(b)), url).toBeGreaterThan(0.8);
      }
    }
    expect(near).toBeGreaterThan(10);
  });

  it('keeps clearly different pages clearly different', async () => {
    const originals = [...truth.values()].filter((i) => i.relation === 'original').map((i) => i.cluster).slice(0, 40);
    const pages = await Promise.all(originals.map((url) => body(url)));
    const articles = pages.map((html) => shingles(words(article(html))));
    const full = pages.map((html) => shingles(words(html)));
    let worstArticle = 0;
    let worstPage = 0;
    for (let i = 0; i < pages.length; i++) {
      for (let j = i + 1; j < pages.length; j++) {
        worstArticle = Math.max(worstArticle, jaccard(articles[i] as Set<string>, articles[j] as Set<string>));
        worstPage = Math.max(worstPage, jaccard(full[i] as Set<string>, full[j] as Set<string>));
      }
    }
    expect(worstArticle).toBeLessThan(0.02);
    expect(worstPage).toBeLessThan(0.1);
    // A few hundred words of prose, with a title of its own.
    const sample = pages[0] as string;
    expect(words(article(sample)).length).toBeGreaterThanOrEqual(300);
    expect(/<title>([^<]+)<\/title>/.exec(sample)?.[1]).toMatch(/^[A-Z][a-z]+( [A-Z][a-z]+){2,5}$/);
  });

  it('carries session ids in a path parameter and in a query parameter no strip list knows', () => {
    const sessions = [...truth.entries()].filter(([, i]) => i.variant?.startsWith('session') && !i.mirror);
    for (const [url, info] of sessions) {
      const original = new URL(info.cluster);
      const { pathname, search } = new URL(url);
      if (info.variant === 'session-path') expect(pathname).toMatch(new RegExp(`^${original.pathname};jsessionid=[0-9A-F]{32}$`));
      else expect(new URLSearchParams(search).get('sid')).toMatch(/^[0-9a-f]{32}$/);
      // The server calls them other pages than the original.
      expect(canonical(url)).not.toBe(canonical(info.cluster));
    }
    expect(sessions.length).toBeGreaterThan(4);
  });

  it('links each variant from its page, and its ground truth is exactly what a crawl of the links finds', async () => {
    const linked = web.links(0, 1).concat(...Array.from({ length: 29 }, (_, p) => web.links(0, p + 1))).filter((l) => l.kind === 'variant');
    expect(linked.length).toBeGreaterThan(5);
    for (const link of linked) {
      expect(link.follow).toBe(true);
      expect(truth.get(link.url as string)?.variant).not.toBeNull();
    }
    web.clearLog();
    const crawl = await miniCrawl(web.describe().seeds, web.origins);
    const expected = web.groundTruth(web.describe().seeds);
    expect(new Set(crawl.fetched.keys())).toEqual(expected);
    // Everything on the original hosts is reachable. A mirror serves its original's bytes, so its
    // absolute links lead back to the original: some mirrored pages are served but never linked.
    const mirrored = [...truth.entries()].filter(([, i]) => i.mirror);
    for (const [url] of [...truth.entries()].filter(([, i]) => !i.mirror)) expect(expected.has(url), url).toBe(true);
    const reachable = mirrored.filter(([url]) => expected.has(url)).length;
    expect(reachable).toBeGreaterThan(mirrored.length / 2);
    expect(reachable).toBeLessThan(mirrored.length);
    await web.idle();
    const analysis = analyzeLog(web.log, { minIntervalMs: 0, expected });
    expect(analysis.coverage).toMatchObject({ missingCount: 0, unexpectedCount: 0 });
    expect(analysis.duplicates.pageCount).toBe(0);
  });

  it('changes a page, its variants and its mirrored copy together', async () => {
    const [url, info] = [...truth.entries()].find(([, i]) => i.variant === 'session-query' && !i.mirror) as [string, DuplicateInfo];
    const before = await httpGet(url);
    const touched = web.touch(info.cluster);
    const [page, session] = [await httpGet(info.cluster), await httpGet(url)];
    expect(session.body.equals(page.body)).toBe(true);
    expect(session.body.equals(before.body)).toBe(false);
    expect(web.pageVersion(url)).toBe(touched.version);
  });

  it('refuses duplicates without prose and unknown hosts or kinds', async () => {
    const base = { hosts: 2, pagesPerHost: 5, linksPerPage: 1, crossHostLinks: 1, baseAddress: '127.1.54.1' };
    await expect(TestWeb.start({ ...base, duplicates: {}, proseWords: null })).rejects.toMatchObject({ code: 'ERR_TESTWEB_OPTIONS' });
    await expect(TestWeb.start({ ...base, duplicates: { mirrors: [2] } })).rejects.toThrow(/mirrors: 2/);
    await expect(TestWeb.start({ ...base, duplicates: { kinds: ['copy' as 'near'] } })).rejects.toThrow(/duplicates.kinds/);
    await expect(TestWeb.start({ ...base, duplicates: { share: 2 } })).rejects.toThrow(/share/);
  });
});

describe('duplicates restricted to some hosts and kinds', () => {
  it('plants only print views, only on the listed host', async () => {
    const web = await TestWeb.start({ hosts: 2, pagesPerHost: 40, linksPerPage: 2, crossHostLinks: 1, baseAddress: '127.1.55.1', seed: 2, duplicates: { hosts: [0], kinds: ['print'], share: 0.5 } });
    try {
      const truth = web.duplicateTruth();
      const copies = [...truth.entries()].filter(([, i]) => i.relation !== 'original');
      expect(copies.length).toBeGreaterThan(10);
      for (const [url, info] of copies) {
        expect(info).toMatchObject({ variant: 'print', relation: 'near', mirror: false });
        expect(url.startsWith(`${web.origins[0]}/print/p/`)).toBe(true);
      }
      const printed = copies[0]?.[0] as string;
      expect((await httpGet(printed)).status).toBe(200);
      expect((await httpGet(printed.replace(web.origins[0] as string, web.origins[1] as string))).status).toBe(404);
      // A page without a print view has none to serve.
      const without = Array.from({ length: 39 }, (_, p) => `${web.origins[0]}/print/p/${p + 1}`).find((u) => !truth.has(u)) as string;
      expect((await httpGet(without)).status).toBe(404);
    } finally {
      await web.stop();
    }
  });
});
