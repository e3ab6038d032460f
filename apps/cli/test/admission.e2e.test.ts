import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Database } from '@trawl/db';
import { SeedsQueue } from '@trawl/queue';
import { createRedis } from '@trawl/redis';
import { TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropNamespace, type Proc, REDIS_URL, REPO, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';

// A seed flood against seed admission, with real `trawl scheduler`, `trawl worker` and `trawl
// seed` processes: far more seeds than TRAWL_FRONTIER_MAX_QUEUED arrive at once; the frontier's
// queued count stays near the threshold while the rest wait in the seeds queue, `trawl seed`
// says why it waits, and once the crawl drains every seed has been admitted and fetched —
// judged from PostgreSQL, the seeds queue and the synthetic web's log, not from counters.
const namespace = uniqueNamespace('admit');
const MAX_QUEUED = 40;
const JOB_SIZE = 10;
const HOSTS = 20;
const PAGES = 16;

const redis = createRedis(REDIS_URL);
const seedsQueue = new SeedsQueue(redis, namespace);
const db = new Database({ url: DATABASE_URL, schema: namespace });
const procs: Proc[] = [];
let web: TestWeb;

const env = (): Record<string, string> => ({
  TRAWL_NAMESPACE: namespace,
  TRAWL_FRONTIER_MAX_QUEUED: String(MAX_QUEUED),
  TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
  TRAWL_SCOPE: 'any',
  // Slower than seeds arrive (20 hosts, one fetch each every 500 ms): the frontier hovers at the threshold.
  TRAWL_MIN_DELAY_MS: '500',
  TRAWL_ADAPTIVE_DELAY_FACTOR: '0',
  TRAWL_CONCURRENCY: '8',
  TRAWL_RECRAWL: 'false',
  TRAWL_METRICS_PORT: '0',
  TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
  TRAWL_LOG_LEVEL: 'warn',
});

const queued = async (): Promise<number> => Number((await redis.hget(`${namespace}:{p0}:stats`, 'queued')) ?? 0);
const admissionState = async (): Promise<string> => (await redis.hget(`${namespace}:{admission}`, 'state')) ?? 'admitting';

beforeAll(async () => {
  web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 0, crossHostLinks: 0, latencyMs: 2, seed: 5 });
  procs.push(trawl(['scheduler'], env()));
  // Its admission watcher's first check records the state.
  await waitFor(async () => (await redis.exists(`${namespace}:{admission}`)) === 1, 60_000, 'the scheduler to start');
}, 90_000);

afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
  await seedsQueue.close();
  await db.close();
  redis.disconnect();
  await web?.stop();
  await dropNamespace(namespace);
});

describe('a seed flood under TRAWL_FRONTIER_MAX_QUEUED', () => {
  // Every page of the web, page by page across hosts, in jobs of JOB_SIZE: 320 seeds, 8 × the threshold.
  let seeds: string[] = [];
  const samples: { t: number; queued: number; seedsWaiting: number; state: string }[] = [];
  let jobs: string[] = [];

  it('fills the frontier only to about the threshold; the other seeds wait in the seeds queue', async () => {
    seeds = Array.from({ length: PAGES }, (_, p) => Array.from({ length: HOSTS }, (_, h) => web.pageUrl(h, p))).flat();
    jobs = await Promise.all(Array.from({ length: seeds.length / JOB_SIZE }, (_, i) => seedsQueue.add({ urls: seeds.slice(i * JOB_SIZE, (i + 1) * JOB_SIZE) })));
    await waitFor(async () => (await admissionState()) === 'paused', 30_000, 'seed admission to pause');
    // No worker yet: nothing drains, so whatever the scheduler admits stays queued.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const counts = await seedsQueue.counts();
    const now = await queued();
    expect(now).toBeGreaterThanOrEqual(MAX_QUEUED);
    // A job is taken only below the threshold, so the frontier overshoots by less than one job.
    expect(now).toBeLessThan(MAX_QUEUED + JOB_SIZE);
    // The jobs taken hold what is queued plus what the dispatcher already leased out (one URL
    // per host into the fetch queue); every other job waits, untouched.
    const leased = await redis.zcard(`${namespace}:{p0}:leases`);
    expect((counts.completed ?? 0) * JOB_SIZE).toBe(now + leased);
    expect(counts.waiting).toBe(jobs.length - (counts.completed ?? 0));
    expect(counts.waiting).toBeGreaterThan(20);
    expect(counts.active).toBe(0);
  });

  it('`trawl seed` says why its job waits and exits 4 when it is still waiting at --timeout', async () => {
    const extra = web.rootUrls()[0] as string;
    // Without TRAWL_FRONTIER_MAX_QUEUED: `trawl seed` follows the threshold the scheduler recorded.
    const { TRAWL_FRONTIER_MAX_QUEUED: _own, ...shell } = env();
    const seed = trawl(['seed', extra, '--timeout', '2'], shell);
    const { code } = await seed.exited;
    expect(code, seed.stderr()).toBe(4);
    expect(seed.stderr()).toMatch(/seed admission is paused: the frontier holds \d+ queued URLs, at or above TRAWL_FRONTIER_MAX_QUEUED \(40\); seeds job \S+ waits in the seeds queue until the crawl drains it below 36/);
    expect(seed.stderr()).toMatch(/still waiting after 2 s/);
    const printed = JSON.parse(seed.stdout()) as { job: string; state: string; admission: string };
    expect(printed).toMatchObject({ state: 'waiting', admission: 'paused' });
    expect(await seedsQueue.queue.getJobState(printed.job)).toBe('waiting');
    jobs.push(printed.job);
  }, 60_000);

  it('admits every seed once the crawl drains, keeping the frontier near the threshold meanwhile', async () => {
    const start = Date.now();
    procs.push(trawl(['worker'], env()));
    let done = false;
    const sampling = (async () => {
      while (!done) {
        const [q, counts, state] = await Promise.all([queued(), seedsQueue.counts(), admissionState()]);
        samples.push({ t: Date.now() - start, queued: q, seedsWaiting: counts.waiting ?? 0, state });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    try {
      await waitFor(
        async () => {
          const states = await Promise.all(jobs.map((id) => seedsQueue.queue.getJobState(id)));
          const leased = await redis.zcard(`${namespace}:{p0}:leases`);
          return states.every((s) => s === 'completed') && (await queued()) === 0 && leased === 0;
        },
        180_000,
        'every seeds job to complete and the crawl to drain',
      );
    } finally {
      done = true;
      await sampling;
    }
    mkdirSync(join(REPO, '.artifacts'), { recursive: true });
    writeFileSync(join(REPO, '.artifacts', 'admission-flood.json'), JSON.stringify({ maxQueued: MAX_QUEUED, jobSize: JOB_SIZE, seeds: seeds.length + 1, samples }, null, 1));
    const peak = Math.max(...samples.map((s) => s.queued));
    expect(peak).toBeLessThan(MAX_QUEUED + JOB_SIZE);
    // It paused and resumed while the seeds queue still held jobs.
    expect(samples.some((s) => s.state === 'paused' && s.seedsWaiting > 0)).toBe(true);
    expect(samples.some((s, i) => i > 0 && s.state === 'admitting' && samples[i - 1]?.state === 'paused')).toBe(true);

    // Nothing lost: every seed is a known URL, fetched (state done), and the web served it.
    const all = [...seeds, web.rootUrls()[0] as string];
    const { rows } = await db.pool.query<{ url: string; state: string }>(`SELECT url, state FROM ${namespace}.urls WHERE url = ANY($1)`, [all]);
    expect(rows).toHaveLength(new Set(all).size);
    expect(rows.filter((r) => r.state !== 'done')).toEqual([]);
    await web.idle();
    const served = new Set(web.log.filter((e) => e.path !== '/robots.txt').map((e) => `http://${e.host}${e.path}`));
    for (const url of all) expect(served.has(url), url).toBe(true);
    const results = await Promise.all(jobs.map(async (id) => (await seedsQueue.queue.getJob(id))?.returnvalue as { enqueued: number; already_seen: number }));
    // Each seed was admitted once, by its own job or (a page a fetched page links to) found first.
    expect(results.reduce((n, r) => n + r.enqueued + r.already_seen, 0)).toBe(seeds.length + 1);
  }, 200_000);

  it('the scheduler, whose seeds consumer paused and resumed, and the worker exit 0 on SIGTERM', async () => {
    for (const p of procs) p.child.kill('SIGTERM');
    for (const p of procs) expect((await p.exited).code, p.stderr()).toBe(0);
  }, 60_000);
});
