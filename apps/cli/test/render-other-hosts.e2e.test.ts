import { Database } from '@trawl/db';
import { analyzeLog, type RequestLogEntry, scriptedPageUrls, type TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CROSS_HOSTS, DATABASE_URL, dropNamespace, startCrossScriptedWeb, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * Rendering pages that need another host's script, judged from the synthetic web's request log:
 * two hosts whose pages each load the OTHER host's script (which adds a link only a browser
 * finds), crawled together with every page rendered. With TRAWL_RENDER_OTHER_HOSTS on, each
 * script request borrows the other host's gate for itself or is refused at once: the crawl
 * finishes (no two jobs wait for each other's host), every host sees one request at a time and
 * the Crawl-delay between any two of them, scripts included; some scripts load (their links are
 * crawled) and the refused ones are named in the page's render reason. With it off (the
 * default), no page's request ever reaches the other host.
 */
const PAGES: readonly [number, number] = [10, 3];
/**
 * Longer than a page's render: a borrow granted while the other host's own job renders (its token
 * out) would land inside that host's delay, and the log would show it.
 */
const CRAWL_DELAY_S = 0.8;
const DELAY_MS = CRAWL_DELAY_S * 1000;

interface PageRow {
  url: string;
  rendered: boolean;
  render_reason: string | null;
}

async function crawlBoth(web: TestWeb, namespace: string, extra: Record<string, string>): Promise<PageRow[]> {
  const roots = CROSS_HOSTS.map((host) => web.rootUrls()[host] as string);
  const crawl = trawl(['crawl', ...roots, '--json'], {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_SCOPE: 'any',
    TRAWL_MIN_DELAY_MS: '100',
    TRAWL_RENDER: 'always',
    TRAWL_RENDER_CONCURRENCY: '2',
    TRAWL_CONCURRENCY: '4',
    TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    ...extra,
  });
  const { code } = await crawl.exited;
  expect(code, crawl.stderr()).toBe(0);
  expect((JSON.parse(crawl.stdout()) as { finished: string }).finished).toBe('complete');
  await web.idle();
  const db = new Database({ url: DATABASE_URL, schema: namespace });
  try {
    return (await db.pool.query<PageRow>(`SELECT url, rendered, render_reason FROM "${namespace}".crawled_pages WHERE http_status = 200`)).rows;
  } finally {
    await db.close();
  }
}

/** The linked pages of both hosts (what any crawl of them must find, script or not). */
const linkedPages = (web: TestWeb): Set<string> =>
  new Set(CROSS_HOSTS.flatMap((host, i) => scriptedPageUrls(new URL(web.rootUrls()[host] as string).origin, { pages: PAGES[i] as number })));
const scriptRequests = (web: TestWeb): RequestLogEntry[] => web.log.filter((e) => e.path === '/static/links.js');
const scriptOnlyPages = (web: TestWeb): RequestLogEntry[] => web.log.filter((e) => e.resource === 'page' && e.path.startsWith('/x/'));

describe('rendering with other hosts\' scripts', () => {
  describe('TRAWL_RENDER_OTHER_HOSTS on', () => {
    let web: TestWeb;
    const namespace = uniqueNamespace('otherhosts');
    beforeAll(async () => {
      web = await startCrossScriptedWeb({ pages: PAGES, crawlDelayS: CRAWL_DELAY_S, seed: 21 });
    });
    afterAll(async () => {
      await web?.stop();
      await dropNamespace(namespace);
    });

    it('finishes, polite on both hosts (scripts included), loads some of the other host\'s scripts and names the refused ones', async () => {
      const rows = await crawlBoth(web, namespace, { TRAWL_RENDER_OTHER_HOSTS: 'true' });

      // No deadlock, nothing lost: every linked page of both hosts, each fetched once.
      const expected = linkedPages(web);
      const report = analyzeLog(web.log, { minIntervalMs: DELAY_MS });
      const fetched = new Set(web.log.filter((e) => e.resource === 'page').map((e) => `${new URL(web.rootUrls()[e.hostIndex] as string).origin}${e.path}`));
      expect([...expected].filter((url) => !fetched.has(url))).toEqual([]);
      expect(report.duplicates.pages).toEqual([]);
      // Polite, every request of both hosts counted (pages, robots.txt, the scripts borrowed by the
      // other host's pages): one in flight at a time, never closer than the Crawl-delay.
      expect(web.log.filter((e) => CROSS_HOSTS.includes(e.hostIndex as 1 | 2)).length).toBeGreaterThan(expected.size);
      expect(report.concurrency.violations).toEqual([]);
      expect(report.concurrency.maxPerHost).toBe(1);
      expect(report.intervals.violations).toEqual([]);

      // Some script loads went through: pages only that script links to were found and crawled.
      const scripts = scriptRequests(web);
      expect(scripts.length).toBeGreaterThan(0);
      expect(scriptOnlyPages(web).length).toBeGreaterThan(0);

      // Every page of the pair was rendered; those whose script was refused say why.
      const pages = rows.filter((r) => !new URL(r.url).pathname.startsWith('/x/'));
      expect(pages).toHaveLength(expected.size);
      expect(pages.filter((r) => !r.rendered)).toEqual([]);
      const refused = pages.filter((r) => r.render_reason?.includes('other hosts refused: '));
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.map((r) => r.render_reason)).toEqual(refused.map(() => expect.stringMatching(/other hosts refused: 127\.[\d.]+:\d+ (busy|not due for \d+ ms|robots\.txt not cached)/)));
      console.log(`other hosts' scripts: ${scripts.length} fetched, ${scriptOnlyPages(web).length} script-only pages crawled, ${refused.length} of ${pages.length} pages refused one; reasons ${JSON.stringify(refused.map((r) => r.render_reason))}`);
    }, 180_000);
  });

  describe('TRAWL_RENDER_OTHER_HOSTS off (the default)', () => {
    let web: TestWeb;
    const namespace = uniqueNamespace('otherhostsoff');
    beforeAll(async () => {
      web = await startCrossScriptedWeb({ pages: PAGES, crawlDelayS: CRAWL_DELAY_S, seed: 22 });
    });
    afterAll(async () => {
      await web?.stop();
      await dropNamespace(namespace);
    });

    it('never lets a page\'s request reach the other host', async () => {
      const rows = await crawlBoth(web, namespace, {});
      const expected = linkedPages(web);
      expect(rows.filter((r) => r.rendered)).toHaveLength(expected.size);
      expect(scriptRequests(web)).toEqual([]);
      expect(scriptOnlyPages(web)).toEqual([]);
      const report = analyzeLog(web.log, { minIntervalMs: DELAY_MS });
      expect(report.concurrency.violations).toEqual([]);
      expect(report.intervals.violations).toEqual([]);
    }, 180_000);
  });
});
