import { analyzeLog, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeAndPolite, crawlVerdict, dropNamespace, type Proc, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';

/**
 * The whole system, as users run it: `trawl crawl` (dispatcher + worker) and two `trawl worker`
 * processes share one crawl of a 50-host synthetic web, against real Redis and PostgreSQL.
 * Everything is judged from the synthetic web's own request log.
 */
const HOSTS = 50;
const PAGES = 20;

let web: TestWeb;
const namespaces: string[] = [];

beforeAll(async () => {
  web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 5 }, seed: 7 });
});

afterAll(async () => {
  await web.stop();
  for (const ns of namespaces) await dropNamespace(ns);
});

function crawlEnv(namespace: string, extra: Record<string, string> = {}): Record<string, string> {
  namespaces.push(namespace);
  return {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_CONCURRENCY: '16',
    TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    ...extra,
  };
}

async function stopAll(procs: Proc[]): Promise<void> {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
}

describe('a crawl with three worker processes', () => {
  it('fetches every page once, politely, and every process exits 0 on SIGTERM', async () => {
    web.clearLog();
    const namespace = uniqueNamespace('e2e');
    const delay = 200;
    const env = crawlEnv(namespace, { TRAWL_MIN_DELAY_MS: String(delay) });
    const seeds = web.rootUrls();
    const crawl = trawl(['crawl', ...seeds, '--json'], env);
    const workers = [trawl(['worker'], env), trawl(['worker'], env)];
    try {
      const { code } = await crawl.exited;
      expect(code, crawl.stderr()).toBe(0);
      const summary = JSON.parse(crawl.stdout()) as { finished: string; fetched: number };
      expect(summary.finished).toBe('complete');

      await web.idle();
      expect(crawlVerdict(web, seeds, delay)).toEqual(completeAndPolite(HOSTS * PAGES));
      expect(analyzeLog(web.log, { minIntervalMs: delay }).intervals.minIntervalMs).toBeGreaterThanOrEqual(delay);
      expect(summary.fetched).toBe(HOSTS * PAGES);
    } finally {
      await stopAll([crawl, ...workers]);
    }
    for (const w of workers) {
      expect((await w.exited).code, w.stderr()).toBe(0);
      // The work was shared: each worker process reports what it fetched as it exits.
      const report = JSON.parse(w.stdout().trim().split('\n').pop() as string) as { fetched: number; drained: boolean };
      expect(report.drained).toBe(true);
      expect(report.fetched).toBeGreaterThan(0);
    }
  }, 180_000);

  it('loses nothing when a worker process is SIGKILLed mid-crawl', async () => {
    web.clearLog();
    const namespace = uniqueNamespace('kill');
    const delay = 300;
    const env = crawlEnv(namespace, {
      TRAWL_MIN_DELAY_MS: String(delay),
      // A dead worker's jobs come back quickly: short job locks and fetch deadlines.
      TRAWL_STALLED_MS: '2000',
      TRAWL_FETCH_DEADLINE_MS: '3000',
      TRAWL_FIRST_BYTE_TIMEOUT_MS: '3000',
      TRAWL_IDLE_TIMEOUT_MS: '3000',
    });
    const seeds = web.rootUrls();
    const victim = trawl(['worker'], env);
    const survivor = trawl(['worker'], env);
    const crawl = trawl(['crawl', ...seeds, '--json'], env);
    try {
      await waitFor(() => web.log.length >= (HOSTS * PAGES) / 3, 120_000, 'a third of the pages');
      victim.child.kill('SIGKILL');
      const { code } = await crawl.exited;
      expect(code, crawl.stderr()).toBe(0);
      expect((JSON.parse(crawl.stdout()) as { finished: string }).finished).toBe('complete');

      await web.idle();
      const expected = web.groundTruth(seeds, 'any');
      const report = analyzeLog(web.log, { minIntervalMs: delay, expected });
      expect(report.coverage?.missing).toEqual([]);
      expect(report.concurrency.violations).toEqual([]);
      expect(report.intervals.violations).toEqual([]);
      // Only what the killed process had in flight may be fetched twice.
      expect(report.duplicates.extraFetches).toBeLessThanOrEqual(16);
      expect((await victim.exited).signal).toBe('SIGKILL');
    } finally {
      await stopAll([crawl, victim, survivor]);
    }
    expect((await survivor.exited).code, survivor.stderr()).toBe(0);
  }, 240_000);
});
