import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeLog } from './analyze.js';
import { createWebModel, lookupResource, pagePath, pagesOf, pageSpec, reachablePages } from './model.js';
import { httpGet, miniCrawl } from './testing/http.js';
import { TestWeb } from './testweb.js';

describe('a surge host (pagesPerHostOverride) in the link table', () => {
  const model = createWebModel({ hosts: 4, pagesPerHost: 20, linksPerPage: 4, crossHostLinks: 2, seed: 6, noisyLinks: true, queryPages: true, pagesPerHostOverride: { 1: 2000 } });

  it('gives the host its own page count, and only it', () => {
    expect([0, 1, 2, 3].map((h) => pagesOf(model, h))).toEqual([20, 2000, 20, 20]);
    expect(lookupResource(model, 1, '/p/1999')).toEqual({ kind: 'page', page: 1999 });
    expect(lookupResource(model, 1, '/p/2000')).toBeNull();
    expect(lookupResource(model, 0, '/p/21')).toBeNull();
    expect(lookupResource(model, 1, pagePath(model, 1, 1998))).toEqual({ kind: 'page', page: 1998 });
  });

  it('links within each host\'s own range, and from other hosts into the whole surge host', () => {
    const targets = Array.from({ length: 4 }, (_, host) => Array.from({ length: pagesOf(model, host) }, (_, page) => pageSpec(model, host, page).links))
      .flat(2)
      .flatMap((link) => (link.kind === 'page' ? [link.target] : []));
    for (const t of targets) expect(t.page).toBeLessThan(pagesOf(model, t.host));
    expect(Math.max(...targets.filter((t) => t.host === 1).map((t) => t.page))).toBeGreaterThan(1900);
    expect(targets.some((t) => t.host !== 1 && t.page >= 20)).toBe(false);
  });

  it('reaches every page of every host from one root', () => {
    const reached = reachablePages(model, [{ host: 0, page: 0 }], null);
    expect(reached).toHaveLength(2060);
    expect(reached.filter((r) => r.host === 1)).toHaveLength(2000);
  });

  it('refuses overrides for hosts outside the link table or below one page', () => {
    const base = { hosts: 2, pagesPerHost: 5, linksPerPage: 1, crossHostLinks: 1, seed: 1, noisyLinks: false, queryPages: false };
    expect(() => createWebModel({ ...base, pagesPerHostOverride: { 2: 10 } })).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_OPTIONS' }));
    expect(() => createWebModel({ ...base, pagesPerHostOverride: { 0: 0 } })).toThrow(/pagesPerHostOverride\[0\]/);
  });
});

describe('a surge host over HTTP', () => {
  let web: TestWeb;

  beforeAll(async () => {
    web = await TestWeb.start({ hosts: 3, pagesPerHost: 10, linksPerPage: 3, crossHostLinks: 1, seed: 12, baseAddress: '127.1.58.1', pagesPerHostOverride: { 0: 300 } });
  });
  afterAll(async () => {
    await web?.stop();
  });

  it('serves the flood on its host and 404s past the others\' ends', async () => {
    expect((await httpGet(web.pageUrl(0, 299))).status).toBe(200);
    expect((await httpGet(`${web.origins[0]}/p/300`)).status).toBe(404);
    expect((await httpGet(`${web.origins[1]}/p/11`)).status).toBe(404);
    expect(() => web.pageUrl(1, 10)).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_RANGE' }));
    expect(web.describe()).toMatchObject({ totalPages: 320, pagesPerHostOverride: { 0: 300 } });
  });

  it('has a ground truth a crawl of the links agrees with', async () => {
    const truth = web.groundTruth(web.describe().seeds);
    expect(truth.size).toBe(320);
    expect([...truth].filter((u) => u.startsWith(web.origins[0] as string))).toHaveLength(300);
    web.clearLog();
    const crawl = await miniCrawl(web.describe().seeds, web.origins);
    expect(new Set(crawl.fetched.keys())).toEqual(truth);
    await web.idle();
    const analysis = analyzeLog(web.log, { minIntervalMs: 0, expected: truth });
    expect(analysis.perHost.map((h) => h.requests)).toEqual([300, 10, 10]);
    expect(analysis.coverage).toMatchObject({ missingCount: 0, unexpectedCount: 0 });
  });
});
