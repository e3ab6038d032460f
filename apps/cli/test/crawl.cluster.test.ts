import { Database } from '@trawl/db';
import { deleteByPrefix, scanKeys } from '@trawl/redis';
import { TEST_REDIS_CLUSTER_URL, testConnection } from '@trawl/redis/testing';
import { analyzeLog, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, type Proc, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';

/**
 * The whole system on a 3-master Redis Cluster (started by the redis-cluster test project's
 * global setup), driven as an operator would, with REDIS_URL naming the seed nodes,
 * TRAWL_REDIS_CLUSTER=true and 6 frontier partitions: once as `trawl crawl` plus a `trawl worker`,
 * once as a fleet (two `trawl scheduler`, a `trawl worker`, `trawl seed`). Judged from the
 * synthetic web's own request log.
 */
const HOSTS = 12;
const PAGES = 10;
const PARTITIONS = 6;
const DELAY_MS = 150;

const redis = testConnection({ name: 'trawl-crawl-cluster' });
let web: TestWeb;
const namespaces: string[] = [];

beforeAll(async () => {
  web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 5 }, seed: 11 });
});

afterAll(async () => {
  await web.stop();
  for (const namespace of namespaces) {
    await deleteByPrefix(redis, `${namespace}:`);
    const db = new Database({ url: DATABASE_URL, schema: namespace });
    await db.dropSchema().finally(() => db.close());
  }
  redis.disconnect();
});

function clusterEnv(label: string): Record<string, string> {
  const namespace = uniqueNamespace(label);
  namespaces.push(namespace);
  return {
    REDIS_URL: TEST_REDIS_CLUSTER_URL as string,
    TRAWL_REDIS_CLUSTER: 'true',
    TRAWL_PARTITIONS: String(PARTITIONS),
    TRAWL_SEEN_SHARDS: '3',
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_SCOPE: 'any',
    TRAWL_MIN_DELAY_MS: String(DELAY_MS),
    TRAWL_CONCURRENCY: '8',
    TRAWL_SCHEDULER_LEASE_MS: '2000',
    TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
  };
}

/** The master (host:port) that owns each partition's slot (CLUSTER KEYSLOT of its tag, CLUSTER SLOTS). */
async function partitionNodes(): Promise<Map<number, string>> {
  const slots = (await redis.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]], ...unknown[]][];
  const nodeOf = new Map<number, string>();
  for (let p = 0; p < PARTITIONS; p += 1) {
    const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', `{p${p}}`));
    const [, , [host, port]] = slots.find(([from, to]) => slot >= from && slot <= to) as (typeof slots)[number];
    nodeOf.set(p, `${host}:${port}`);
  }
  return nodeOf;
}

/** Every page fetched once, one request per host at a time, at least the delay apart. */
async function expectCompletePoliteCrawl(seeds: readonly string[]): Promise<void> {
  await web.idle();
  const expected = web.groundTruth(seeds, 'any');
  expect(expected.size).toBe(HOSTS * PAGES);
  const report = analyzeLog(web.log, { minIntervalMs: DELAY_MS, expected });
  expect(report.coverage?.missing).toEqual([]);
  expect(report.coverage?.unexpected).toEqual([]);
  expect(report.duplicates.pages).toEqual([]);
  expect(report.concurrency.maxPerHost).toBe(1);
  expect(report.intervals.violations).toEqual([]);
}

/** Each partition's keys are on the master its slot says, and nowhere else. */
async function expectPartitionsWhereTheirSlotsAre(namespace: string, nodeOf: Map<number, string>): Promise<void> {
  const seenOn = new Map<number, Set<string>>();
  for await (const { node, keys } of scanKeys(redis, `${namespace}:{p*`)) {
    for (const key of keys) {
      const p = Number(/:\{p(\d+)\}:/.exec(key)?.[1]);
      if (!seenOn.has(p)) seenOn.set(p, new Set());
      seenOn.get(p)?.add(`${node.options.host}:${node.options.port}`);
    }
  }
  for (let p = 0; p < PARTITIONS; p += 1) expect([...(seenOn.get(p) ?? [])]).toEqual([nodeOf.get(p)]);
}

const alive = (p: Proc) => p.child.exitCode === null && p.child.signalCode === null;

async function stopAll(procs: readonly Proc[]): Promise<void> {
  for (const p of procs) if (alive(p)) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
}

describe('trawl on a Redis Cluster', () => {
  it('spreads 6 partitions over the three masters', async () => {
    expect(new Set((await partitionNodes()).values()).size).toBe(3);
  });

  it('trawl crawl + trawl worker: every page once, politely, each partition on its master', async () => {
    web.clearLog();
    const env = clusterEnv('cluster');
    const seeds = web.rootUrls();
    // The crawl starts once the worker has said it is started: a worker still loading its modules
    // when the crawl's own worker has fetched every page would have nothing to show.
    const worker = trawl(['worker'], { ...env, TRAWL_LOG_LEVEL: 'info' });
    const procs = [worker];
    try {
      await waitFor(() => worker.stderr().includes('"msg":"worker started"') || !alive(worker), 60_000, 'the trawl worker to start');
      expect(alive(worker), worker.stderr()).toBe(true);
      const crawl = trawl(['crawl', ...seeds, '--json'], env);
      procs.push(crawl);
      const { code } = await crawl.exited;
      expect(code, crawl.stderr()).toBe(0);
      expect((JSON.parse(crawl.stdout()) as { finished: string }).finished).toBe('complete');
      await expectCompletePoliteCrawl(seeds);
    } finally {
      await stopAll(procs);
    }
    expect((await worker.exited).code, worker.stderr()).toBe(0);
    expect((JSON.parse(worker.stdout().trim().split('\n').pop() as string) as { fetched: number }).fetched).toBeGreaterThan(0);
    await expectPartitionsWhereTheirSlotsAre(env.TRAWL_NAMESPACE as string, await partitionNodes());
  }, 180_000);

  it('a fleet (two schedulers, a worker, trawl seed): every page once, politely', async () => {
    web.clearLog();
    const env = clusterEnv('clfleet');
    const procs = [trawl(['scheduler'], env), trawl(['scheduler'], env), trawl(['worker'], env)];
    const status = async () => {
      const proc = trawl(['status'], env);
      const { code } = await proc.exited;
      if (code !== 0) throw new Error(`trawl status exited ${code}: ${proc.stderr()}`);
      return JSON.parse(proc.stdout()) as { frontier: { queued: number; leased: number }; queues: Record<string, number>; schedulers: { partitions: number[] }[] };
    };
    try {
      await waitFor(async () => (await status()).schedulers.flatMap((s) => s.partitions).length === PARTITIONS, 30_000, 'the schedulers to own every partition');
      const seeds = web.rootUrls();
      const seed = trawl(['seed', ...seeds], env);
      expect((await seed.exited).code, seed.stderr()).toBe(0);
      expect(JSON.parse(seed.stdout())).toMatchObject({ state: 'done', enqueued: HOSTS });
      await waitFor(() => web.log.length > 0, 30_000, 'the first fetch');
      await waitFor(
        async () => {
          const s = await status();
          return s.frontier.queued === 0 && s.frontier.leased === 0 && !s.queues.waiting && !s.queues.active && !s.queues.delayed;
        },
        120_000,
        'the crawl to go idle',
      );
      await expectCompletePoliteCrawl(seeds);
    } finally {
      await stopAll(procs);
    }
    for (const p of procs) expect((await p.exited).code, p.stderr()).toBe(0);
  }, 240_000);
});
