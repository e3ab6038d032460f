import { Database } from '@trawl/db';
import { deleteByPrefix, scanKeys } from '@trawl/redis';
import { TEST_REDIS_CLUSTER_URL, testConnection } from '@trawl/redis/testing';
import { analyzeLog, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, type Proc, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * The whole system on a 3-master Redis Cluster (started by the redis-cluster test project's
 * global setup), driven as an operator would: `trawl crawl` plus one `trawl worker`, with
 * REDIS_URL naming the seed nodes, TRAWL_REDIS_CLUSTER=true and 6 frontier partitions. Judged
 * from the synthetic web's own request log.
 */
const HOSTS = 12;
const PAGES = 10;
const PARTITIONS = 6;
const DELAY_MS = 150;

const redis = testConnection({ name: 'trawl-crawl-cluster' });
let web: TestWeb;
const namespace = uniqueNamespace('cluster');

beforeAll(async () => {
  web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 5 }, seed: 11 });
});

afterAll(async () => {
  await web.stop();
  await deleteByPrefix(redis, `${namespace}:`);
  redis.disconnect();
  const db = new Database({ url: DATABASE_URL, schema: namespace });
  await db.dropSchema().finally(() => db.close());
});

/** The master (host:port) that owns each hash slot range, from CLUSTER SLOTS. */
async function slotOwners(): Promise<{ from: number; to: number; node: string }[]> {
  const slots = (await redis.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]], ...unknown[]][];
  return slots.map(([from, to, [host, port]]) => ({ from, to, node: `${host}:${port}` }));
}

describe('a crawl on a Redis Cluster', () => {
  it('spreads 6 partitions over the masters and fetches every page once, politely', async () => {
    // Where each partition lives: the owner of the slot of its hash tag.
    const owners = await slotOwners();
    const nodeOf = new Map<number, string>();
    for (let p = 0; p < PARTITIONS; p += 1) {
      const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', `{p${p}}`));
      nodeOf.set(p, (owners.find((o) => slot >= o.from && slot <= o.to) as { node: string }).node);
    }
    expect(new Set(nodeOf.values()).size).toBe(3);

    const env = {
      REDIS_URL: TEST_REDIS_CLUSTER_URL as string,
      TRAWL_REDIS_CLUSTER: 'true',
      TRAWL_PARTITIONS: String(PARTITIONS),
      TRAWL_SEEN_SHARDS: '3',
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_MIN_DELAY_MS: String(DELAY_MS),
      TRAWL_CONCURRENCY: '8',
      TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    };
    const seeds = web.rootUrls();
    const worker = trawl(['worker'], env);
    const crawl = trawl(['crawl', ...seeds, '--json'], env);
    const procs: Proc[] = [crawl, worker];
    try {
      const { code } = await crawl.exited;
      expect(code, crawl.stderr()).toBe(0);
      const summary = JSON.parse(crawl.stdout()) as { finished: string; fetched: number };
      expect(summary.finished).toBe('complete');

      await web.idle();
      const expected = web.groundTruth(seeds, 'any');
      expect(expected.size).toBe(HOSTS * PAGES);
      const report = analyzeLog(web.log, { minIntervalMs: DELAY_MS, expected });
      expect(report.coverage?.missing).toEqual([]);
      expect(report.coverage?.unexpected).toEqual([]);
      expect(report.duplicates.pages).toEqual([]);
      expect(report.concurrency.violations).toEqual([]);
      expect(report.concurrency.maxPerHost).toBe(1);
      expect(report.intervals.violations).toEqual([]);
    } finally {
      for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
      await Promise.all(procs.map((p) => p.exited));
    }
    expect((await worker.exited).code, worker.stderr()).toBe(0);
    const workerReport = JSON.parse(worker.stdout().trim().split('\n').pop() as string) as { fetched: number };
    expect(workerReport.fetched).toBeGreaterThan(0);

    // The crawl's keys really are where the slots say: each partition's keys on its master.
    const seenOn = new Map<number, Set<string>>();
    for await (const { node, keys } of scanKeys(redis, `${namespace}:{p*`)) {
      for (const key of keys) {
        const p = Number(/:\{p(\d+)\}:/.exec(key)?.[1]);
        if (!seenOn.has(p)) seenOn.set(p, new Set());
        seenOn.get(p)?.add(`${node.options.host}:${node.options.port}`);
      }
    }
    for (let p = 0; p < PARTITIONS; p += 1) expect([...(seenOn.get(p) ?? [])]).toEqual([nodeOf.get(p)]);
  }, 180_000);
});
