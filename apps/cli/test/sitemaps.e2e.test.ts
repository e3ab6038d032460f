import { loadConfig } from '@trawl/config';
import { policyFromConfig } from '@trawl/model';
import { Database } from '@trawl/db';
import { addSeeds } from '@trawl/dispatch';
import { Runtime } from '@trawl/runtime';
import { startSchedulerService } from '@trawl/scheduler';
import { silentLogger } from '@trawl/telemetry';
import { analyzeLog, TestWeb } from '@trawl/testweb';
import { createCrawlWorker } from '@trawl/worker';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropNamespace, REDIS_URL, uniqueNamespace, waitFor } from '../src/testing/index.js';

/**
 * Sitemaps in every format sitemaps.org accepts, read by the crawl's sitemap step: host 0
 * publishes a text sitemap, host 1 an RSS 2.0 feed, host 2 an Atom feed (each named by its
 * robots.txt). With TRAWL_MAX_DEPTH=1 and one link a page, links alone reach a root and one
 * page; every other page can only come from the host's sitemap. Each list also names the root of
 * host 3, which no page links to: a sitemap may not list another host's URLs, so host 3 must
 * never be asked for anything. Judged from the web's request log, and the sitemaps table.
 */
const namespace = uniqueNamespace('sitemaps');
afterAll(() => dropNamespace(namespace));

const PAGES = 6;
const DELAY = 50;

describe('sitemaps in a crawl: text, RSS and Atom, and the location rule', () => {
  it('discovers every listed page of each kind, and skips what a sitemap may not list', async () => {
    const web = await TestWeb.start({
      hosts: 4,
      pagesPerHost: PAGES,
      linksPerPage: 1,
      crossHostLinks: 0,
      seed: 5,
      sitemaps: { hosts: [0, 1, 2], formats: { 0: 'text', 1: 'rss', 2: 'atom' }, foreignHost: 3 },
    });
    const config = loadConfig({
      env: {
        TRAWL_NAMESPACE: namespace,
        TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
        TRAWL_SCOPE: 'any',
        TRAWL_MAX_DEPTH: '1',
        TRAWL_MIN_DELAY_MS: String(DELAY),
        TRAWL_ADAPTIVE_DELAY_FACTOR: '0',
        TRAWL_RECRAWL: 'false',
        TRAWL_SITEMAP_SWEEP_INTERVAL_S: '0.25',
        TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
      },
    });
    const runtime = await Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger: silentLogger, role: 'test' });
    const worker = createCrawlWorker(runtime, { concurrency: 8 });
    worker.start();
    await worker.ready();
    const scheduler = await startSchedulerService(runtime);
    const roots = web.rootUrls().slice(0, 3);
    // Every page of the three hosts (all reachable by links without a depth limit).
    const expected = [...web.groundTruth(roots, 'any')];
    const fetched = () => new Set(web.log.filter((e) => e.method === 'GET' && e.status === 200 && e.pageKey !== null).map((e) => `http://${e.host}${e.pageKey}`));
    try {
      await addSeeds({ policyStore: runtime.policyStore, discovery: runtime.discovery(), basePolicy: () => policyFromConfig(config, []) }, { urls: roots });
      await waitFor(() => expected.every((u) => fetched().has(u)), 60_000, 'every page of the three sitemap hosts');
      // Give a wrongly queued foreign URL the time to be fetched.
      await new Promise((r) => setTimeout(r, 1_500));
    } finally {
      await scheduler.stop();
      await worker.stop(5000);
      await runtime.close();
      await web.stop();
    }

    expect(expected).toHaveLength(3 * PAGES);
    const got = fetched();
    for (const url of expected) expect(got.has(url), url).toBe(true);
    // The sitemaps themselves were read, each in its format (the server's log).
    const paths = new Set(web.log.filter((e) => e.status === 200).map((e) => e.path));
    for (const path of ['/sitemap.txt', '/rss.xml', '/atom.xml']) expect(paths.has(path), path).toBe(true);
    // Host 3 is named only by the sitemaps, which may not name it: never asked for anything.
    const foreignHost = new URL(web.rootUrls()[3] as string).host;
    expect(web.log.filter((e) => e.host === foreignHost)).toEqual([]);
    const analysis = analyzeLog(web.log, { minIntervalMs: DELAY });
    expect(analysis.concurrency.violations).toEqual([]);

    const db = new Database({ url: DATABASE_URL, schema: namespace });
    try {
      const { rows } = await db.pool.query<{ url: string; entries: number; error: string | null }>(`SELECT url, entries, error FROM "${namespace}".sitemaps ORDER BY url`);
      expect(rows.map((r) => new URL(r.url).pathname).sort()).toEqual(['/atom.xml', '/rss.xml', '/sitemap.txt']);
      for (const row of rows) {
        expect(row.entries, row.url).toBe(PAGES + 1);
        expect(row.error, row.url).toBe("1 entries outside the sitemap's location skipped");
      }
    } finally {
      await db.close();
    }
  }, 120_000);
});
