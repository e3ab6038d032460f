import { frontierKeys } from '@trawl/frontier';
import { createRedis } from '@trawl/redis';
import { analyzeLog, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropNamespace, outstandingUrls, type Proc, REDIS_URL, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';

/**
 * The fetch and process stages as processes of their own (TRAWL_WORKER_ROLES), judged from the
 * synthetic web's log: a scheduler, fetch-only workers and process-only workers complete a crawl
 * once and politely though a process-only worker is SIGKILLed mid-crawl; and with no process
 * stage at all, fetch admission stops at the backlog limit and resumes when one starts.
 */
const PARTITIONS = 2;
const DELAY = 100;
const CLAIM_MS = 2000;

const redis = createRedis(REDIS_URL);
const alive = (p: Proc) => p.child.exitCode === null && p.child.signalCode === null;

const envFor = (namespace: string, extra: Record<string, string> = {}) => ({
  TRAWL_NAMESPACE: namespace,
  TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
  TRAWL_PARTITIONS: String(PARTITIONS),
  TRAWL_MIN_DELAY_MS: String(DELAY),
  TRAWL_SCOPE: 'any',
  TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
  TRAWL_PROCESS_CLAIM_MS: String(CLAIM_MS),
  ...extra,
});

/** Pages handed off and not yet recorded, over every partition (read from the streams themselves). */
const backlog = async (namespace: string) => {
  let depth = 0;
  for (let p = 0; p < PARTITIONS; p += 1) {
    const keys = frontierKeys(namespace, p);
    depth += (await redis.xlen(keys.process)) + (await redis.xlen(keys.urgent));
  }
  return depth;
};

/** URLs still to do (leased, handed-off ones included, and queued): 0 when the crawl is done. */
const outstanding = (namespace: string) => outstandingUrls(redis, namespace, PARTITIONS);

/** A synthetic web for one describe block (started before its tests; stopped, and the namespace dropped, after). */
function syntheticWeb(namespace: string, size: { hosts: number; pagesPerHost: number; seed: number }): { get: () => TestWeb } {
  let web: TestWeb | undefined;
  beforeAll(async () => {
    web = await TestWeb.start({ ...size, linksPerPage: 3, crossHostLinks: 1, latencyMs: { min: 1, max: 5 } });
  });
  afterAll(async () => {
    await web?.stop();
    await dropNamespace(namespace);
  });
  return { get: () => web as TestWeb };
}

/** Judged from the web's log: every expected page fetched, once, one request per host at a time, never under the delay. */
async function expectCompleteOncePolite(web: TestWeb, expected: Set<string>): Promise<void> {
  await web.idle();
  const report = analyzeLog(web.log, { minIntervalMs: DELAY, expected });
  expect(report.coverage?.missing).toEqual([]);
  expect(report.duplicates.pages).toEqual([]);
  expect(report.concurrency.violations).toEqual([]);
  expect(report.intervals.violations).toEqual([]);
}

async function stopAll(procs: Proc[]): Promise<void> {
  for (const p of procs) if (alive(p)) p.child.kill('SIGTERM');
  for (const p of procs) expect((await p.exited).code, p.stderr()).toBe(0);
}

async function seed(env: Record<string, string>, urls: string[]): Promise<void> {
  const proc = trawl(['seed', ...urls], env);
  const { code } = await proc.exited;
  expect(code, proc.stderr()).toBe(0);
}

afterAll(() => {
  redis.disconnect();
});

describe('fetch and process stages in separate processes', () => {
  const namespace = uniqueNamespace('stages');
  const web = syntheticWeb(namespace, { hosts: 24, pagesPerHost: 12, seed: 21 });

  it('completes once and politely with fetch-only and process-only workers, one of them SIGKILLed', async () => {
    const env = envFor(namespace);
    const scheduler = trawl(['scheduler'], env);
    const fetchers = [trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'fetch' }), trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'fetch' })];
    const processors = [trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'process' }), trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'process' })];
    const all = [scheduler, ...fetchers, ...processors];
    try {
      const seeds = web.get().rootUrls();
      await seed(env, seeds);
      const expected = web.get().groundTruth(seeds, 'any');
      await waitFor(() => web.get().log.length >= expected.size / 3, 90_000, 'a third of the crawl');
      const victim = processors[0] as Proc;
      victim.child.kill('SIGKILL');
      await waitFor(async () => (await outstanding(namespace)) === 0, 180_000, 'the crawl to finish');
      expect(await backlog(namespace)).toBe(0);

      // Nothing fetched twice: the killed process stage's pages were processed from their stored bodies.
      await expectCompleteOncePolite(web.get(), expected);
      await stopAll(all.filter((p) => p !== victim));
    } finally {
      for (const p of all) if (alive(p)) p.child.kill('SIGKILL');
      await Promise.all(all.map((p) => p.exited));
    }
  }, 300_000);
});

describe('backpressure: a process stage that falls behind', () => {
  const namespace = uniqueNamespace('flood');
  const web = syntheticWeb(namespace, { hosts: 40, pagesPerHost: 8, seed: 22 });

  it('stops admitting fetches at the backlog limit, and resumes as the backlog drains', async () => {
    const LIMIT = 20;
    const CONCURRENCY = 8;
    const WINDOW = 8;
    const env = envFor(namespace, { TRAWL_PROCESS_BACKLOG_MAX: String(LIMIT), TRAWL_CONCURRENCY: String(CONCURRENCY), TRAWL_DISPATCH_WINDOW: String(WINDOW) });
    const scheduler = trawl(['scheduler'], env);
    const fetcher = trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'fetch' });
    const all: Proc[] = [scheduler, fetcher];
    try {
      const seeds = web.get().rootUrls();
      await seed(env, seeds);
      const expected = web.get().groundTruth(seeds, 'any');
      // No process stage: pages pile up on the streams until admission stops.
      await waitFor(async () => (await backlog(namespace)) >= LIMIT, 60_000, 'the backlog to reach its limit');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const stalledAt = web.get().log.length;
      const stalledBacklog = await backlog(namespace);
      await new Promise((resolve) => setTimeout(resolve, 3000));
      // Held: at most what was queued or in flight when the limit was reached went on.
      expect(web.get().log.length - stalledAt).toBeLessThanOrEqual(PARTITIONS * (WINDOW + CONCURRENCY));
      expect(await backlog(namespace)).toBeLessThanOrEqual(PARTITIONS * (LIMIT + WINDOW + CONCURRENCY));
      expect(web.get().log.length).toBeLessThan(expected.size);
      console.log(`[backpressure] admission held at ${stalledAt} requests with ${stalledBacklog} pages waiting (limit ${LIMIT} per partition)`);

      // A process stage starts: the backlog drains and fetching resumes to the end.
      const processor = trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'process' });
      all.push(processor);
      const started = Date.now();
      const resumedFrom = web.get().log.length;
      let drainedMs: number | null = null;
      await waitFor(
        async () => {
          if (drainedMs === null && (await backlog(namespace)) === 0) drainedMs = Date.now() - started;
          return (await outstanding(namespace)) === 0;
        },
        180_000,
        'the crawl to finish',
      );
      expect(await backlog(namespace)).toBe(0);
      expect(web.get().log.length).toBeGreaterThan(resumedFrom);
      console.log(
        `[backpressure] process stage started: backlog first empty after ${drainedMs ?? 'n/a'} ms, crawl done after ${Date.now() - started} ms, ${web.get().log.length - resumedFrom} requests after the hold (of ${web.get().log.length})`,
      );
      await expectCompleteOncePolite(web.get(), expected);
      await stopAll(all);
    } finally {
      for (const p of all) if (alive(p)) p.child.kill('SIGKILL');
      await Promise.all(all.map((p) => p.exited));
    }
  }, 300_000);
});
