import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '@trawl/db';
import { analyzeLog, scriptedNeedsRender, type ScriptedKind, type TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropNamespace, PLAIN_HOST, SCRIPTED_HOSTS, scriptedWebPages, startScriptedWeb, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * Rendering in a real crawl, with trawl's default settings: a single-page app (every link written
 * by a script from JSON it fetches), a hybrid site (odd pages link on only through an inline
 * script) and a plain site, judged from the synthetic web's request log. Chromium renders the
 * pages that need it; every request it makes is one of its host's polite turns; the plain site is
 * never rendered.
 */
const PAGES = 30;
const CRAWL_DELAY_S = 0.3;
const DELAY_MS = CRAWL_DELAY_S * 1000;
/** Host indexes: the link table's one plain host, then the scripted ones (extra hosts). */
const PLAIN = PLAIN_HOST;
const SCRIPTED = SCRIPTED_HOSTS;

let web: TestWeb;
let hostsFile: string;
const namespace = uniqueNamespace('render');

beforeAll(async () => {
  // Named hosts, as on the web: the browser's requests resolve the page's name as fetches do.
  web = await startScriptedWeb({ pages: PAGES, crawlDelayS: CRAWL_DELAY_S, seed: 11, hostnames: 'test' });
  hostsFile = join(mkdtempSync(join(tmpdir(), 'trawl-render-')), 'hosts');
  writeFileSync(hostsFile, web.hostsFile());
});

afterAll(async () => {
  await web?.stop();
  await dropNamespace(namespace);
});

describe('rendering with the default settings', () => {
  it('finds every page of an SPA, a hybrid and a plain site, politely (subresources included), and never renders the plain one', async () => {
    const roots = web.rootUrls();
    const origins = roots.map((root) => new URL(root).origin);
    const crawl = trawl(['crawl', ...roots, '--json'], {
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_HOSTS_FILE: hostsFile,
      TRAWL_SCOPE: 'any',
      TRAWL_MIN_DELAY_MS: '100',
      TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    });
    const { code } = await crawl.exited;
    expect(code, crawl.stderr()).toBe(0);
    expect((JSON.parse(crawl.stdout()) as { finished: string }).finished).toBe('complete');
    await web.idle();

    // Complete: every page of the three hosts, each fetched once.
    const expected = scriptedWebPages(web, PAGES);
    expect(expected.size).toBe(3 * PAGES);
    const report = analyzeLog(web.log, { minIntervalMs: DELAY_MS, expected });
    expect(report.coverage?.missing).toEqual([]);
    expect(report.coverage?.unexpected).toEqual([]);
    expect(report.duplicates.pages).toEqual([]);
    // Polite, the browser's requests included: one request at a time per host, never closer than the Crawl-delay.
    expect(report.concurrency.violations).toEqual([]);
    expect(report.intervals.violations).toEqual([]);

    const byHost = (host: number) => web.log.filter((e) => e.hostIndex === host);
    // The SPA's script and stylesheet once (the subresource cache), its data once per page, its image never.
    const spa = byHost(1);
    const count = (path: string) => spa.filter((e) => e.path === path).length;
    expect(count('/static/app.js')).toBe(1);
    expect(count('/static/app.css')).toBe(1);
    expect(count('/static/logo.png')).toBe(0);
    expect(spa.filter((e) => e.note === 'data')).toHaveLength(PAGES);
    // The plain site: nothing but robots.txt and its pages.
    expect(byHost(PLAIN).filter((e) => e.resource !== 'page' && e.path !== '/robots.txt')).toEqual([]);

    // The decision and its reason, per page, from PostgreSQL.
    const db = new Database({ url: DATABASE_URL, schema: namespace });
    let rows: { url: string; rendered: boolean; render_reason: string | null; rendered_key: string | null }[];
    try {
      rows = (await db.pool.query<{ url: string; rendered: boolean; render_reason: string | null; rendered_key: string | null }>(`SELECT url, rendered, render_reason, rendered_key FROM "${namespace}".crawled_pages WHERE http_status = 200`)).rows;
    } finally {
      await db.close();
    }
    expect(rows).toHaveLength(3 * PAGES);
    const hostOf = (url: string) => origins.indexOf(new URL(url).origin);
    const plainRows = rows.filter((r) => hostOf(r.url) === PLAIN);
    expect(plainRows.filter((r) => r.rendered)).toEqual([]);
    expect(new Set(plainRows.map((r) => r.render_reason))).toEqual(new Set(['no-scripts']));

    // Precision and recall of the decision on this web: pages rendered that needed it / pages that needed it.
    const pageOf = (url: string) => (new URL(url).pathname === '/' ? 0 : Number(new URL(url).pathname.split('/').pop()));
    const needed = (r: { url: string }) => hostOf(r.url) !== PLAIN && scriptedNeedsRender(SCRIPTED[hostOf(r.url)] as ScriptedKind, pageOf(r.url));
    const rendered = rows.filter((r) => r.rendered);
    // Each rendered page's DOM is where its row says (for `trawl export warc`); no other row names one.
    expect(rendered.filter((r) => r.rendered_key === null)).toEqual([]);
    expect(rows.filter((r) => !r.rendered && r.rendered_key !== null)).toEqual([]);
    const hits = rendered.filter(needed).length;
    const precision = hits / rendered.length;
    const recall = hits / rows.filter(needed).length;
    console.log(`render decision on the e2e web: ${rendered.length} rendered, ${rows.filter(needed).length} needed it, precision ${precision.toFixed(3)}, recall ${recall.toFixed(3)}; reasons ${JSON.stringify(countBy(rows.map((r) => `${hostOf(r.url)}:${r.rendered}:${r.render_reason}`)))}`);
    expect(recall).toBe(1);
    expect(precision).toBeGreaterThanOrEqual(0.9);
  }, 180_000);
});

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
