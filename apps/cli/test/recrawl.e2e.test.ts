import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { addSeeds } from '@trawl/dispatch';
import { policyFromConfig } from '@trawl/model';
import { Database } from '@trawl/db';
import { changeIntervalS } from '@trawl/recrawl';
import { Runtime } from '@trawl/runtime';
import { type SchedulerService, startSchedulerService } from '@trawl/scheduler';
import { silentLogger } from '@trawl/telemetry';
import { analyzeLog, type RequestLogEntry, TestWeb } from '@trawl/testweb';
import { createCrawlWorker } from '@trawl/worker';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropNamespace, REDIS_URL, uniqueNamespace } from '../src/testing/index.js';

/**
 * Keeping a crawl fresh, with intervals scaled to seconds: a scheduler and a worker (in this
 * process) re-crawl a synthetic web whose pages change at known rates. Judged from the web's
 * request log (visit intervals, conditional GETs, politeness) and from PostgreSQL (estimates,
 * intervals, stored bodies).
 */
const namespaces: string[] = [];
afterAll(async () => {
  for (const ns of namespaces) await dropNamespace(ns);
});

const DELAY = 100;
const MIN_S = 1;
const MAX_S = 16;

function env(namespace: string, extra: Record<string, string> = {}): Record<string, string> {
  namespaces.push(namespace);
  return {
    TRAWL_NAMESPACE: namespace,
    REDIS_URL,
    DATABASE_URL,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_SCOPE: 'any',
    TRAWL_MIN_DELAY_MS: String(DELAY),
    TRAWL_ADAPTIVE_DELAY_FACTOR: '0',
    TRAWL_CONCURRENCY: '16',
    TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    TRAWL_RECRAWL_MIN_INTERVAL_S: String(MIN_S),
    TRAWL_RECRAWL_MAX_INTERVAL_S: String(MAX_S),
    TRAWL_RECRAWL_INITIAL_INTERVAL_S: '4',
    TRAWL_RECRAWL_SWEEP_INTERVAL_S: '0.25',
    TRAWL_SITEMAP_SWEEP_INTERVAL_S: '0.25',
    TRAWL_SITEMAP_REFRESH_INTERVAL_S: '2',
    TRAWL_SCHEDULER_LEASE_MS: '1500',
    ...extra,
  };
}

interface Crawl {
  runtime: Runtime;
  stop(): Promise<void>;
}

/** A scheduler and a worker in this process, seeded with `seeds`. */
async function startCrawl(vars: Record<string, string>, seeds: string[]): Promise<Crawl> {
  const config = loadConfig({ env: vars });
  const runtime = await Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger: silentLogger, role: 'test' });
  const worker = createCrawlWorker(runtime, { concurrency: config.worker.concurrency });
  worker.start();
  await worker.ready();
  const service: SchedulerService = await startSchedulerService(runtime);
  await addSeeds({ policyStore: runtime.policyStore, discovery: runtime.discovery(), basePolicy: () => policyFromConfig(config, []) }, { urls: seeds });
  return {
    runtime,
    async stop() {
      await service.stop();
      await worker.stop(5000);
      await runtime.close();
    },
  };
}

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : (sorted[Math.floor((sorted.length - 1) / 2)] as number);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const urlOf = (e: RequestLogEntry): string | null => (e.pageKey === null ? null : `http://${e.host}${e.pageKey}`);
const pageFetches = (log: readonly RequestLogEntry[], url: string) =>
  log.filter((e) => urlOf(e) === url && e.method === 'GET' && (e.status === 200 || e.status === 304)).map((e) => e.start);
const originOf = (web: TestWeb, host: number): string => (web.rootUrls()[host] as string).replace(/\/$/, '');

describe('re-crawling a changing web', () => {
  it('converges on each page class\'s change rate, backs static pages off, answers sitemap bumps, and stores nothing for a 304', async () => {
    const namespace = uniqueNamespace('recrawl');
    const vars = env(namespace);
    const classes = [
      { name: 'fast', everyMs: 3000, weight: 1 },
      { name: 'slow', everyMs: 8000, weight: 1 },
      { name: 'static', everyMs: null, weight: 1 },
    ];
    // Host 2 publishes a sitemap (with lastmod); hosts 0 and 1 are judged on the estimator alone.
    const web = await TestWeb.start({ hosts: 3, pagesPerHost: 9, linksPerPage: 3, crossHostLinks: 1, seed: 21, changes: { classes }, sitemaps: { hosts: [2] } });
    const crawl = await startCrawl(vars, web.rootUrls());
    const runMs = 70_000;
    const started = Date.now();
    let bumped: { url: string; at: number } | null = null;
    try {
      await sleep(runMs - 15_000);
      // A static page of the sitemap host, long settled at the maximum interval: bump it.
      const statics = [...web.groundTruth(web.rootUrls(), 'any')].filter((u) => u.startsWith(originOf(web, 2)) && web.changeIntervalMs(u) === null);
      const target = statics.find((u) => u !== `${originOf(web, 2)}/`) as string;
      const before = pageFetches(web.log, target);
      web.touch(target);
      bumped = { url: target, at: Date.now() };
      await sleep(15_000);
      expect(before.length).toBeGreaterThan(0);
    } finally {
      await crawl.stop();
      await web.stop();
    }
    const log = web.log;
    const db = new Database({ url: DATABASE_URL, schema: namespace });

    // Politeness held throughout, judged at the server.
    const analysis = analyzeLog(log, { minIntervalMs: DELAY });
    expect(analysis.concurrency.violations).toEqual([]);
    expect(analysis.intervals.violations).toEqual([]);

    // Per class: the estimated change interval (PostgreSQL) and the visit interval (server log,
    // second half of the run) of pages on the hosts without a sitemap.
    const { rows } = await db.pool.query<{ url: string; visits: number; changes: number; changed_s: number; unchanged_s: number; recrawl_interval_s: number | null }>(
      `SELECT url, change_visits AS visits, change_count AS changes, changed_s, unchanged_s, recrawl_interval_s FROM "${namespace}".crawled_pages`,
    );
    const byClass = new Map<string, { estimates: number[]; visits: number[]; intervals: number[]; counts: number[] }>();
    for (const row of rows) {
      if (row.url.startsWith(originOf(web, 2))) continue;
      const cls = web.changeClassOf(row.url)?.name ?? 'none';
      const entry = byClass.get(cls) ?? { estimates: [], visits: [], intervals: [], counts: [] };
      byClass.set(cls, entry);
      // The estimate from the stored statistics (the change_frequency_s column rounds to seconds).
      const estimate = changeIntervalS({ visits: row.visits, changes: row.changes, changedS: row.changed_s, unchangedS: row.unchanged_s });
      if (estimate !== null) entry.estimates.push(estimate);
      if (row.recrawl_interval_s !== null) entry.intervals.push(row.recrawl_interval_s);
      const times = pageFetches(log, row.url);
      entry.counts.push(times.length);
      const late = times.filter((t) => t >= started + runMs / 2);
      for (let i = 1; i < late.length; i += 1) entry.visits.push(((late[i] as number) - (late[i - 1] as number)) / 1000);
    }
    const fast = byClass.get('fast');
    const slow = byClass.get('slow');
    const still = byClass.get('static');
    const summary = Object.fromEntries(
      [...byClass].map(([name, e]) => [name, { pages: e.counts.length, visits: median(e.counts), estimateS: median(e.estimates), visitIntervalS: median(e.visits), intervalS: median(e.intervals) }]),
    );
    console.log(`[re-crawl convergence] ${JSON.stringify(summary)}`);
    // The estimate converges toward the true change interval (3 s and 8 s), within ±40 % after
    // the visits this run allows (printed above); visits follow at half of it (the revisit
    // fraction).
    expect(median(fast?.estimates ?? [])).toBeGreaterThan(3 * 0.6);
    expect(median(fast?.estimates ?? [])).toBeLessThan(3 * 1.4);
    expect(median(slow?.estimates ?? [])).toBeGreaterThan(8 * 0.6);
    expect(median(slow?.estimates ?? [])).toBeLessThan(8 * 1.4);
    expect(median(fast?.visits ?? [])).toBeGreaterThan(1.5 * 0.6);
    expect(median(fast?.visits ?? [])).toBeLessThan(1.5 * 1.4);
    expect(median(slow?.visits ?? [])).toBeGreaterThan(4 * 0.6);
    expect(median(slow?.visits ?? [])).toBeLessThan(4 * 1.4);
    // Static pages drift to the maximum interval, and are visited that rarely.
    expect(still?.intervals.every((s) => s === MAX_S)).toBe(true);
    expect(median(still?.visits ?? [])).toBeGreaterThan(MAX_S * 0.85);

    // A sitemap lastmod bump: re-fetched within one sitemap refresh (2 s) plus sweeps and a turn.
    const after = pageFetches(log, (bumped as { url: string }).url).filter((t) => t >= (bumped as { at: number }).at);
    expect(after.length).toBeGreaterThan(0);
    const reactionMs = (after[0] as number) - (bumped as { at: number }).at;
    console.log(`[sitemap bump] re-fetched ${reactionMs} ms after the lastmod moved`);
    expect(reactionMs).toBeLessThan(5000);

    // Conditional GETs: unchanged pages answered 304, and no body was stored twice. Every 200 of
    // a page carried a version not stored before (a 200 for an unchanged page would mean the
    // validators were not sent).
    expect(analysis.conditional.notModified).toBeGreaterThan(50);
    for (const row of rows) {
      const versions = log.filter((e) => urlOf(e) === row.url && e.status === 200 && e.version !== undefined).map((e) => e.version);
      expect(new Set(versions).size, row.url).toBe(versions.length);
    }
    const dir = `.trawl/test-content/${namespace}`;
    // The store may hold pages' texts beside their bodies (TRAWL_CONTENT_STORE_TEXT), and it
    // holds the scheduler's seen-set snapshots: count the HTML bodies alone.
    const files = readdirSync(dir, { recursive: true }).filter((f) => !String(f).startsWith('seen-snapshots') && statSync(join(dir, String(f))).isFile());
    const unpack = (f: string): Buffer => (f.endsWith('.gz') ? gunzipSync : brotliDecompressSync)(readFileSync(join(dir, f)));
    const stored = files.filter((f) => unpack(String(f)).subarray(0, 1).toString() === '<').length;
    const bodies = new Set(log.filter((e) => e.status === 200 && e.version !== undefined).map((e) => `${urlOf(e)}#${e.version}`)).size;
    expect(stored).toBeLessThanOrEqual(bodies);
    rmSync(dir, { recursive: true, force: true });
    await db.close();
  }, 150_000);

  it('a surge host with a flood of due pages does not delay the other hosts\' re-crawls', async () => {
    const namespace = uniqueNamespace('surge');
    const vars = env(namespace, { TRAWL_RECRAWL_INITIAL_INTERVAL_S: '2', TRAWL_SITEMAPS: 'false' });
    // Host 0 has 300 pages, each changing every 2 s: it wants ~150 fetches/s and may have 10
    // (100 ms apart). Hosts 1–3 have 5 pages changing every 3 s.
    const web = await TestWeb.start({
      hosts: 4,
      pagesPerHost: 5,
      pagesPerHostOverride: { 0: 300 },
      linksPerPage: 3,
      crossHostLinks: 1,
      seed: 5,
      changes: { everyMs: (host) => (host === 0 ? 2000 : 3000) },
    });
    const crawl = await startCrawl(vars, web.rootUrls());
    const runMs = 40_000;
    try {
      await sleep(runMs);
    } finally {
      await crawl.stop();
      await web.stop();
    }
    const db = new Database({ url: DATABASE_URL, schema: namespace });
    try {
      const since = new Date(Date.now() - runMs / 2);
      const { rows } = await db.pool.query<{ surge: boolean; n: string; p50: number; p90: number }>(
        `SELECT host = $1 AS surge, count(*) AS n,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM fetched_at - due_at)) AS p50,
                percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM fetched_at - due_at)) AS p90
         FROM "${namespace}".recrawl_visits WHERE fetched_at >= $2 GROUP BY 1`,
        [new URL(web.rootUrls()[0] as string).host, since],
      );
      const surge = rows.find((r) => r.surge);
      const others = rows.find((r) => !r.surge);
      console.log(`[surge] re-crawl lateness in the last ${runMs / 2000} s: ${JSON.stringify(rows)}`);
      // The surge host runs flat out at its polite limit (one request per 100 ms) and still falls
      // behind…
      const surgeHost = new URL(web.rootUrls()[0] as string).host;
      const surgeRequests = web.log.filter((e) => e.host === surgeHost && e.start >= since.getTime()).length;
      console.log(`[surge] the surge host served ${surgeRequests} requests in those ${runMs / 2000} s (polite limit ${runMs / 2 / DELAY})`);
      expect(surgeRequests).toBeGreaterThan(0.75 * (runMs / 2 / DELAY));
      expect(surge?.p50).toBeGreaterThan(others?.p90 ?? 0);
      // …while the other hosts' re-crawls stay on time.
      expect(Number(others?.n)).toBeGreaterThan(40);
      expect(others?.p90).toBeLessThan(1.5);
      const analysis = analyzeLog(web.log, { minIntervalMs: DELAY });
      expect(analysis.concurrency.violations).toEqual([]);
      expect(analysis.intervals.violations).toEqual([]);
    } finally {
      await db.close();
    }
  }, 120_000);
});
