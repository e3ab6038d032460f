import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedHost, scriptedNeedsRender, scriptedPageUrls } from './scripted.js';
import { TestWeb } from './testweb.js';

let web: TestWeb;
let spa: string;
let hybrid: string;

beforeAll(async () => {
  web = await TestWeb.start({
    hosts: 1,
    pagesPerHost: 2,
    linksPerPage: 1,
    crossHostLinks: 0,
    extraHosts: 2,
    hostHandlers: { 1: scriptedHost('spa', { pages: 5, crawlDelayS: 0.5 }), 2: scriptedHost('hybrid', { pages: 5 }) },
  });
  [, spa, hybrid] = web.rootUrls().map((root) => new URL(root).origin) as [string, string, string];
});

afterAll(() => web.stop());

const get = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
};

describe('scripted hosts', () => {
  it('a SPA serves one shell for every page, its script, and the data that holds its links', async () => {
    const shell = await get(`${spa}/p/3`);
    expect(shell.text).toContain('<div id="root"></div>');
    expect(shell.text).not.toContain('<a ');
    expect((await get(`${spa}/`)).text).toBe(shell.text.replace('App 3', 'App 0'));
    // Page 2 links to 3 and to (2 × 7 + 3) mod 5 = 2; page 3's two targets are one (4), listed once.
    expect(JSON.parse((await get(`${spa}/data/2.json`)).text)).toMatchObject({ links: ['/p/3', '/p/2'] });
    expect(JSON.parse((await get(`${spa}/data/3.json`)).text)).toMatchObject({ links: ['/p/4'] });
    expect((await get(`${spa}/static/app.js`)).type).toBe('application/javascript');
    expect((await get(`${spa}/data/5.json`)).status).toBe(404);
    expect((await get(`${spa}/p/5`)).status).toBe(404);
    expect((await get(`${spa}/robots.txt`)).text).toContain('Crawl-delay: 0.5');
    const logged = web.log.filter((e) => e.hostIndex === 1).map((e) => [e.path, e.resource ?? null, e.note ?? null]);
    expect(logged).toContainEqual(['/p/3', 'page', null]);
    expect(logged).toContainEqual(['/data/3.json', 'file', 'data']);
    expect(logged).toContainEqual(['/static/app.js', 'file', 'script']);
  });

  it('a hybrid host links even pages on with HTML, odd pages only through an inline script; the last page links home', async () => {
    expect((await get(`${hybrid}/p/2`)).text).toContain('<a href="/p/3">');
    const odd = (await get(`${hybrid}/p/1`)).text;
    expect(odd).not.toMatch(/<a href="\/p\/2">[^']*<\/a><\/p>/);
    expect(odd).toContain(`innerHTML = '<li><a href="/p/2">`);
    expect((await get(`${hybrid}/p/4`)).text).toContain('<a href="/">');
    expect((await get(`${hybrid}/robots.txt`)).text).not.toContain('Crawl-delay');
  });

  it('says which pages a crawler must find and which need a browser', () => {
    expect(scriptedPageUrls('http://h', { pages: 3 })).toEqual(['http://h/', 'http://h/p/1', 'http://h/p/2']);
    expect([0, 1, 2].map((p) => scriptedNeedsRender('hybrid', p))).toEqual([false, true, false]);
    expect([0, 1].map((p) => scriptedNeedsRender('spa', p))).toEqual([true, true]);
  });
});
