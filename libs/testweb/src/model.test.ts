import { describe, expect, it } from 'vitest';
import type { LinkAnchor, LinkNoise, PageRef, WebShape } from './model.js';
import { createWebModel, isQueryPage, lookupResource, pagePath, pageSpec, reachablePages } from './model.js';
import { baseHref, hrefOf, renderPage } from './render.js';
import { requestKey } from './request-key.js';

const shape = (overrides: Partial<WebShape> = {}): WebShape => ({
  hosts: 4,
  pagesPerHost: 40,
  linksPerPage: 5,
  crossHostLinks: 2,
  seed: 42,
  noisyLinks: true,
  queryPages: true,
  ...overrides,
});
const originOf = (host: number): string => `http://127.1.0.${host + 1}:8123`;

function allPages(hosts: number, pages: number): PageRef[] {
  return Array.from({ length: hosts * pages }, (_, i) => ({ host: Math.floor(i / pages), page: i % pages }));
}

describe('link table determinism', () => {
  it('gives identical link tables and bodies for the same seed', () => {
    const a = createWebModel(shape());
    const b = createWebModel(shape());
    for (const { host, page } of allPages(4, 40)) {
      expect(pageSpec(a, host, page)).toEqual(pageSpec(b, host, page));
      expect(renderPage(a, host, page, originOf, 2048)).toBe(renderPage(b, host, page, originOf, 2048));
    }
  });

  it('gives different link tables and bodies for a different seed', () => {
    const a = createWebModel(shape({ seed: 1 }));
    const b = createWebModel(shape({ seed: 2 }));
    const pages = allPages(4, 40);
    const sameLinks = pages.filter(({ host, page }) => JSON.stringify(pageSpec(a, host, page).links) === JSON.stringify(pageSpec(b, host, page).links));
    const sameBodies = pages.filter(({ host, page }) => renderPage(a, host, page, originOf, 2048) === renderPage(b, host, page, originOf, 2048));
    expect(sameLinks.length).toBeLessThan(pages.length / 10);
    expect(sameBodies).toEqual([]);
  });

  it('keeps the same link graph with noise on or off', () => {
    const noisy = createWebModel(shape());
    const clean = createWebModel(shape({ noisyLinks: false }));
    const targets = (model: typeof noisy, host: number, page: number): PageRef[] =>
      pageSpec(model, host, page).links.flatMap((link) => (link.kind === 'page' ? [link.target] : []));
    for (const { host, page } of allPages(4, 40)) expect(targets(noisy, host, page)).toEqual(targets(clean, host, page));
  });

  it('pads bodies to about pageBytes', () => {
    const model = createWebModel(shape());
    expect(Buffer.byteLength(renderPage(model, 1, 7, originOf, 4096))).toBe(4096);
    expect(Buffer.byteLength(renderPage(model, 1, 7, originOf, 0))).toBeLessThan(2048);
  });
});

describe('link table shape', () => {
  it('links page p to p + 1, the root to the next root, with the requested link counts', () => {
    const model = createWebModel(shape({ noisyLinks: false }));
    for (const { host, page } of allPages(4, 40)) {
      const links = pageSpec(model, host, page).links;
      const intra = links.filter((l) => l.kind === 'page' && l.target.host === host);
      const cross = links.filter((l) => l.kind === 'page' && l.target.host !== host);
      expect(intra).toHaveLength(5);
      expect(cross).toHaveLength(2);
      if (page + 1 < 40) expect(links[0]).toMatchObject({ target: { host, page: page + 1 } });
      if (page === 0) expect(cross[0]).toMatchObject({ target: { host: (host + 1) % 4, page: 0 } });
    }
  });

  it('still chains pages when linksPerPage is 0, and has no cross links when crossHostLinks is 0', () => {
    const model = createWebModel(shape({ linksPerPage: 0, crossHostLinks: 0, noisyLinks: false }));
    expect(pageSpec(model, 0, 3).links).toEqual([{ kind: 'page', target: { host: 0, page: 4 }, anchor: 'root', noise: 'none', token: expect.any(Number) }]);
    expect(pageSpec(model, 0, 39).links).toEqual([]);
  });

  it('emits only canonical hrefs and no unfollowable links without noise', () => {
    const model = createWebModel(shape({ noisyLinks: false, queryPages: false }));
    for (const { host, page } of allPages(4, 40)) {
      const spec = pageSpec(model, host, page);
      expect(spec.base).toBeNull();
      for (const link of spec.links) {
        if (link.kind !== 'page') throw new Error(`unexpected ${link.kind} link`);
        const path = pagePath(model, link.target.host, link.target.page);
        expect(hrefOf(model, spec, link, originOf)).toBe(link.target.host === host ? path : `${originOf(link.target.host)}${path}`);
      }
    }
  });

  it('uses every link form, both kinds of <base href>, and every unfollowable link kind when noisy', () => {
    const model = createWebModel(shape({ hosts: 5, pagesPerHost: 100 }));
    const anchors = new Set<LinkAnchor>();
    const noises = new Set<LinkNoise>();
    const kinds = new Set<string>();
    const bases = new Set<string>();
    for (const { host, page } of allPages(5, 100)) {
      const spec = pageSpec(model, host, page);
      if (spec.base) bases.add(spec.base.kind);
      for (const link of spec.links) {
        kinds.add(link.kind);
        if (link.kind === 'page') {
          anchors.add(link.anchor);
          noises.add(link.noise);
        }
      }
    }
    expect([...anchors].sort()).toEqual(['absolute', 'absoluteUpper', 'relative', 'relativeDot', 'relativeUp', 'root']);
    expect([...noises].sort()).toEqual(['dot', 'dotdot', 'fbclid', 'fragment', 'gclid', 'none', 'percent', 'queryOrder', 'utm']);
    expect([...kinds].sort()).toEqual(['javascript', 'mailto', 'nofollow', 'page', 'tel']);
    expect([...bases].sort()).toEqual(['absolute', 'rootRelative']);
  });

  it('emits hrefs that resolve (WHATWG URL, honouring <base href>) to their target page', () => {
    const model = createWebModel(shape({ hosts: 5, pagesPerHost: 100 }));
    let checked = 0;
    for (const { host, page } of allPages(5, 100)) {
      const spec = pageSpec(model, host, page);
      const documentUrl = `${originOf(host)}${spec.path}`;
      const base = new URL(baseHref(spec, originOf) ?? documentUrl, documentUrl);
      for (const link of spec.links) {
        if (link.kind !== 'page') continue;
        const href = hrefOf(model, spec, link, originOf);
        const resolved = new URL(href, base);
        expect(resolved.origin, href).toBe(originOf(link.target.host));
        const key = requestKey(resolved.pathname + resolved.search);
        expect(key, `${href} on ${documentUrl}`).toBe(pagePath(model, link.target.host, link.target.page));
        expect(lookupResource(model, link.target.host, key as string)).toEqual({ kind: 'page', page: link.target.page });
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(3000);
  });
});

describe('lookupResource', () => {
  const model = createWebModel(shape());
  it.each([
    ['/', { kind: 'page', page: 0 }],
    ['/p/1', { kind: 'page', page: 1 }],
    ['/p/39', { kind: 'page', page: 39 }],
    ['/robots.txt', { kind: 'robots' }],
    ['/nofollow/7', { kind: 'nofollow', id: 7 }],
    ['/p/0', null],
    ['/p/40', null],
    ['/p/01', null],
    ['/p/3', null], // page 3 is a query page
    ['/p/1?x=1', null],
    ['/nofollow/40', null],
    ['/nope', null],
  ])('%s', (key, resource) => {
    expect(lookupResource(model, 0, key)).toEqual(resource);
  });

  it('finds query pages only with their own b value', () => {
    expect(isQueryPage(model, 3)).toBe(true);
    const path = pagePath(model, 2, 3);
    expect(path).toMatch(/^\/q\?a=3&b=\d+$/);
    expect(lookupResource(model, 2, path)).toEqual({ kind: 'page', page: 3 });
    const b = Number(path.split('b=')[1]);
    expect(lookupResource(model, 2, `/q?a=3&b=${b + 1}`)).toBeNull();
    expect(lookupResource(model, 2, '/q?a=4&b=1')).toBeNull();
  });
});

describe('reachablePages', () => {
  it('reaches every page of every host from one root when hosts are linked', () => {
    const model = createWebModel(shape());
    expect(reachablePages(model, [{ host: 0, page: 0 }], null)).toHaveLength(4 * 40);
  });

  it('stays on the seeds’ hosts when asked, and skips pages the filter refuses', () => {
    const model = createWebModel(shape());
    const pages = reachablePages(model, [{ host: 2, page: 0 }], new Set([2]), (ref) => ref.page !== 10);
    expect(pages.every((ref) => ref.host === 2)).toBe(true);
    expect(pages.map((ref) => ref.page).sort((a, b) => a - b)).toEqual([...Array(40).keys()].filter((p) => p !== 10));
  });
});

describe('createWebModel', () => {
  it.each([{ hosts: 0 }, { pagesPerHost: 0 }, { linksPerPage: -1 }, { crossHostLinks: 1.5 }, { seed: Number.NaN }])('refuses %j', (bad) => {
    expect(() => createWebModel(shape(bad))).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_OPTIONS' }));
  });
});
