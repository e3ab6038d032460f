import http from 'node:http';
import { describe, expect, it } from 'vitest';
import type { WebModel } from './model.js';
import { createWebModel, pageSpec, reachablePages } from './model.js';
import type { PageProfile } from './profile.js';
import { analyzeLog } from './analyze.js';
import { describeProfile, hostLatencyMs, pageSizeBytes, parsePageProfile, REALISTIC_PROFILE, realisticProfile, responseLatencyMs } from './profile.js';
import { mulberry32 } from './prng.js';
import { renderRealisticPage, SITE_SCRIPT, SITE_SCRIPT_PATH } from './realistic.js';
import { TestWeb } from './testweb.js';

const originOf = (host: number): string => `http://h${host}.test:8123`;

function realisticModel(seed: number, hosts = 200, pagesPerHost = 10, profile: PageProfile = REALISTIC_PROFILE): WebModel {
  return createWebModel({
    hosts,
    pagesPerHost,
    linksPerPage: 4,
    crossHostLinks: 2,
    seed,
    noisyLinks: true,
    queryPages: true,
    layout: { links: profile.links, navLinks: profile.navLinks, footerLinks: profile.footerLinks, noisyShare: profile.noisyLinkShare },
  });
}

const quantile = (values: readonly number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(q * (sorted.length - 1))] as number;
};

/** The 2,000 pages of a 200 × 10 web, rendered once for the distribution tests. */
const model = realisticModel(21);
const pages = Array.from({ length: 2000 }, (_, i) => {
  const host = Math.floor(i / 10);
  const page = i % 10;
  return { host, page, html: renderRealisticPage(model, host, page, originOf, REALISTIC_PROFILE, 0) };
});

describe('the profile option', () => {
  it('accepts the realistic profile and its polite variant', () => {
    expect(parsePageProfile(REALISTIC_PROFILE)).toEqual(REALISTIC_PROFILE);
    expect(realisticProfile({ maxLatencyMs: 100 }).hostLatencyMs).toEqual({ median: 50, p90: 100, max: 100 });
  });

  it.each([
    ['median above p90', { ...REALISTIC_PROFILE, pageBytes: { median: 200_000, p90: 120_000, max: 1_500_000 } }, 'pageBytes'],
    ['links min above max', { ...REALISTIC_PROFILE, links: { min: 90, max: 40 } }, 'links'],
    ['no room for body links', { ...REALISTIC_PROFILE, navLinks: 30 }, 'links.min'],
    ['an unknown field', { ...REALISTIC_PROFILE, pageKB: 30 }, 'pageKB'],
    ['a negative latency', { ...REALISTIC_PROFILE, hostLatencyMs: { median: -1, p90: 10, max: 20 } }, 'hostLatencyMs'],
  ])('refuses %s with ERR_TESTWEB_OPTIONS', (_name, input, field) => {
    expect(() => parsePageProfile(input)).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_OPTIONS', message: expect.stringContaining(field) }));
  });

  it('refuses options the profile sets itself', async () => {
    await expect(TestWeb.start({ hosts: 1, pagesPerHost: 1, linksPerPage: 0, crossHostLinks: 0, profile: REALISTIC_PROFILE, latencyMs: 5 })).rejects.toMatchObject({
      code: 'ERR_TESTWEB_OPTIONS',
      message: expect.stringContaining('latencyMs'),
    });
  });
});

describe('realistic page sizes (2,000 pages)', () => {
  const sizes = pages.map((p) => Buffer.byteLength(p.html));

  it('have a median near 30 KB and a 90th percentile near 120 KB', () => {
    expect(quantile(sizes, 0.5)).toBeGreaterThan(25_000);
    expect(quantile(sizes, 0.5)).toBeLessThan(36_000);
    expect(quantile(sizes, 0.9)).toBeGreaterThan(95_000);
    expect(quantile(sizes, 0.9)).toBeLessThan(150_000);
  });

  it('have a tail: a few pages over 500 KB, none far past the cap', () => {
    const over = sizes.filter((s) => s > 500_000).length;
    expect(over).toBeGreaterThanOrEqual(2);
    expect(over).toBeLessThanOrEqual(40);
    expect(Math.max(...sizes)).toBeLessThan(REALISTIC_PROFILE.pageBytes.max + 20_000);
  });

  it('land close to the size drawn for each page', () => {
    for (const { host, page, html } of pages.slice(0, 300)) {
      const target = pageSizeBytes(REALISTIC_PROFILE, model.seed, host, page);
      // Small targets are raised to what the page's chrome and links take; others overshoot by at most a paragraph.
      if (target > 12_000) expect(Math.abs(Buffer.byteLength(html) - target) / target).toBeLessThan(0.1);
    }
  });
});

describe('realistic links', () => {
  it('carry 20–150 links to pages (plus at most four mailto/tel/javascript/nofollow), median 40–70', () => {
    const pageLinks = pages.map(({ host, page }) => pageSpec(model, host, page).links.filter((l) => l.kind === 'page').length);
    expect(Math.min(...pageLinks)).toBeGreaterThanOrEqual(20);
    expect(Math.max(...pageLinks)).toBeLessThanOrEqual(150);
    expect(quantile(pageLinks, 0.5)).toBeGreaterThanOrEqual(40);
    expect(quantile(pageLinks, 0.5)).toBeLessThanOrEqual(70);
    const anchors = pages.map(({ html }) => (html.match(/<a href=/g) ?? []).length);
    expect(Math.min(...anchors)).toBeGreaterThanOrEqual(20);
    expect(Math.max(...anchors)).toBeLessThanOrEqual(154);
  });

  it('give every page of a host the same navigation and footer, to pages of the host', () => {
    const chrome = (page: number) =>
      pageSpec(model, 7, page).links.flatMap((l) => (l.kind === 'page' && l.region !== undefined ? [`${l.region}:${l.target.host}/${l.target.page}`] : []));
    expect(chrome(0)).toHaveLength(REALISTIC_PROFILE.navLinks + REALISTIC_PROFILE.footerLinks);
    expect(chrome(0)[0]).toBe('nav:7/0');
    for (let page = 1; page < 10; page++) expect(chrome(page)).toEqual(chrome(0));
    // A site template writes them canonical and root-relative.
    for (const link of pageSpec(model, 7, 3).links) {
      if (link.kind === 'page' && link.region !== undefined) expect([link.anchor, link.noise]).toEqual(['root', 'none']);
    }
  });

  it('write about one body link in ten in a non-canonical form, navigation and footer never', () => {
    const body = pages.flatMap(({ host, page }) => pageSpec(model, host, page).links.filter((l) => l.kind === 'page' && l.region === undefined && l.noise !== 'queryOrder'));
    const noisy = body.filter((l) => l.kind === 'page' && l.noise !== 'none').length / body.length;
    expect(noisy).toBeGreaterThan(0.08);
    expect(noisy).toBeLessThan(0.12);
  });

  it('keep every page reachable from one root', () => {
    expect(reachablePages(model, [{ host: 0, page: 0 }], null)).toHaveLength(2000);
  });
});

describe('realistic text', () => {
  const words = (html: string) => html.replace(/<style>.*?<\/style>/s, '').replace(/<[^>]+>/g, ' ').toLowerCase().match(/[a-z]+/g) ?? [];
  const shingles = (html: string) => {
    const w = words(html.slice(html.indexOf('<article>'), html.indexOf('</article>')));
    return new Set(w.slice(2).map((_, i) => `${w[i]} ${w[i + 1]} ${w[i + 2]}`));
  };

  it('has headings, navigation, footer and varied prose', () => {
    const { html } = pages.find((p) => Buffer.byteLength(p.html) > 25_000 && Buffer.byteLength(p.html) < 40_000) as (typeof pages)[number];
    for (const tag of ['<h1>', '<h2>', '<nav ', '<footer ', '<article>', '<title>']) expect(html).toContain(tag);
    expect(new Set(words(html)).size).toBeGreaterThan(400);
    const paragraphs = html.match(/<p>[^<]*/g) ?? [];
    expect(paragraphs.length).toBeGreaterThan(30);
    expect(new Set(paragraphs).size).toBe(paragraphs.length);
  });

  it('shares almost no three-word runs between two pages', () => {
    const a = shingles((pages[10] as (typeof pages)[number]).html);
    for (const other of [pages[11], pages[500], pages[1999]]) {
      const b = shingles((other as (typeof pages)[number]).html);
      const shared = [...a].filter((s) => b.has(s)).length;
      expect(shared / (a.size + b.size - shared)).toBeLessThan(0.05);
    }
  });

  it('is the same bytes for the same seed, other bytes for another', () => {
    const again = realisticModel(21);
    const other = realisticModel(22);
    for (const { host, page, html } of pages.slice(0, 50)) {
      expect(renderRealisticPage(again, host, page, originOf, REALISTIC_PROFILE, 0)).toBe(html);
      expect(renderRealisticPage(other, host, page, originOf, REALISTIC_PROFILE, 0)).not.toBe(html);
    }
  });
});

describe('realistic latency', () => {
  const hosts = Array.from({ length: 1000 }, (_, host) => hostLatencyMs(REALISTIC_PROFILE, 21, host));

  it('has a median near 50 ms and a tail to 500 ms (a few slow hosts)', () => {
    expect(quantile(hosts, 0.5)).toBeGreaterThan(40);
    expect(quantile(hosts, 0.5)).toBeLessThan(60);
    expect(quantile(hosts, 0.9)).toBeGreaterThan(120);
    expect(quantile(hosts, 0.9)).toBeLessThan(185);
    expect(Math.max(...hosts)).toBeLessThanOrEqual(500);
    expect(hosts.filter((ms) => ms > 300).length).toBeGreaterThanOrEqual(3);
    expect(hosts.filter((ms) => ms > 300).length).toBeLessThanOrEqual(40);
  });

  it('is the same per host for the same seed', () => {
    expect(Array.from({ length: 1000 }, (_, host) => hostLatencyMs(REALISTIC_PROFILE, 21, host))).toEqual(hosts);
    expect(hostLatencyMs(REALISTIC_PROFILE, 22, 3)).not.toBe(hosts[3]);
  });

  it('stays at or under 100 ms with the polite cap, jitter included', () => {
    const polite = realisticProfile({ maxLatencyMs: 100 });
    const random = mulberry32(5);
    for (let host = 0; host < 1000; host++) {
      const ms = hostLatencyMs(polite, 21, host);
      expect(ms).toBeLessThanOrEqual(100);
      expect(responseLatencyMs(polite, ms, random)).toBeLessThanOrEqual(100);
    }
    expect(quantile(Array.from({ length: 1000 }, (_, host) => hostLatencyMs(polite, 21, host)), 0.5)).toBeGreaterThan(40);
  });
});

function get(url: string): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }));
      })
      .on('error', reject);
  });
}

describe('a realistic web served', () => {
  it('serves what html() renders, logs every request, and answers at each host latency', async () => {
    const web = await TestWeb.start({ hosts: 3, pagesPerHost: 6, linksPerPage: 4, crossHostLinks: 2, seed: 9, baseAddress: '127.1.90.1', profile: REALISTIC_PROFILE });
    try {
      const expected = web.groundTruth(web.rootUrls());
      expect(expected.size).toBe(18);
      for (const url of expected) {
        const reply = await get(url);
        expect(reply.status).toBe(200);
        const resolved = web.resolvePage(url);
        expect(reply.body).toBe(web.html(resolved?.host as number, resolved?.page as number));
        const host = resolved?.host as number;
        expect(reply.ms).toBeGreaterThanOrEqual(hostLatencyMs(REALISTIC_PROFILE, web.model.seed, host) * (1 - REALISTIC_PROFILE.latencyJitter) - 2);
      }
      await web.idle();
      expect(web.log).toHaveLength(18);
      expect(web.log.every((e) => e.resource === 'page' && e.status === 200 && e.bytes > 3000)).toBe(true);
      expect(web.describe().profile).toContain('realistic');
    } finally {
      await web.stop();
    }
  });
});

describe('a realistic web with its pages kept', () => {
  it('draws every page once when warmed, serves the same bytes as html(), and keeps no more than its bound', async () => {
    const web = await TestWeb.start({ hosts: 3, pagesPerHost: 6, linksPerPage: 4, crossHostLinks: 2, seed: 9, baseAddress: '127.1.93.1', profile: REALISTIC_PROFILE, pageCacheBytes: 64 << 20 });
    try {
      const warmed = web.warmPages();
      expect(warmed.pages).toBe(18);
      const urls = [...web.groundTruth(web.rootUrls())];
      let total = 0;
      for (const url of urls) {
        const resolved = web.resolvePage(url);
        const html = web.html(resolved?.host as number, resolved?.page as number);
        total += Buffer.byteLength(html);
        expect((await get(url)).body).toBe(html);
      }
      expect(warmed.bytes).toBe(total);
      await web.idle();
      expect(web.log.every((e) => e.status === 200 && e.bytes > 3000)).toBe(true);
    } finally {
      await web.stop();
    }
    // A bound smaller than the web: the pages served are still whole and right, the kept ones fewer.
    const small = await TestWeb.start({ hosts: 3, pagesPerHost: 6, linksPerPage: 4, crossHostLinks: 2, seed: 9, baseAddress: '127.1.94.1', profile: REALISTIC_PROFILE, pageCacheBytes: 100_000 });
    try {
      const warmed = small.warmPages();
      expect(warmed.bytes).toBeLessThanOrEqual(100_000);
      expect(warmed.pages).toBeLessThan(18);
      for (const url of small.groundTruth(small.rootUrls())) {
        const resolved = small.resolvePage(url);
        expect((await get(url)).body).toBe(small.html(resolved?.host as number, resolved?.page as number));
      }
    } finally {
      await small.stop();
    }
  });

  it('refuses a bound that is not a whole number of bytes', async () => {
    await expect(TestWeb.start({ hosts: 1, pagesPerHost: 1, linksPerPage: 0, crossHostLinks: 0, profile: REALISTIC_PROFILE, pageCacheBytes: -1 })).rejects.toThrow(/pageCacheBytes/);
  });
});

describe('realistic pages with typical scripts', () => {
  it('carry an analytics tag, JSON-LD and the site script, which the host serves and the log keeps out of coverage', async () => {
    const profile = realisticProfile({ scripts: 'typical' });
    expect(profile.scripts).toBe('typical');
    expect(describeProfile(profile)).toContain('typical scripts');
    expect(REALISTIC_PROFILE.scripts).toBe('none');
    const web = await TestWeb.start({ hosts: 2, pagesPerHost: 3, linksPerPage: 4, crossHostLinks: 1, seed: 9, baseAddress: '127.1.91.1', profile });
    try {
      const [root] = web.rootUrls();
      const page = await get(root as string);
      expect(page.body).toContain('<script async src="https://tags.analytics.invalid/gtag/js?id=');
      expect(page.body).toContain('<script type="application/ld+json">{"@context":"https://schema.org"');
      expect(page.body).toContain(`<script defer src="${SITE_SCRIPT_PATH}"></script>`);
      const script = await get(new URL(SITE_SCRIPT_PATH, root).href);
      expect(script.status).toBe(200);
      expect(script.body).toBe(SITE_SCRIPT);
      await web.idle();
      expect(web.log.map((e) => e.resource)).toEqual(['page', 'script']);
      const analysis = analyzeLog(web.log, { minIntervalMs: 0, expected: new Set([root as string]) });
      expect(analysis.coverage).toMatchObject({ missingCount: 0, unexpectedCount: 0 });
      expect(analysis.duplicates.pageCount).toBe(0);
    } finally {
      await web.stop();
    }
    // Without the setting, no host serves a script and no page names one.
    const plain = await TestWeb.start({ hosts: 1, pagesPerHost: 2, linksPerPage: 2, crossHostLinks: 0, seed: 9, baseAddress: '127.1.92.1', profile: REALISTIC_PROFILE });
    try {
      const [root] = plain.rootUrls();
      expect((await get(root as string)).body).not.toContain('<script');
      expect((await get(new URL(SITE_SCRIPT_PATH, root).href)).status).toBe(404);
    } finally {
      await plain.stop();
    }
  });
});
