import { prefixPattern, scanKeys } from '@trawl/redis';
import { testConnection, testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFetchJob, type FetchJob, type JobResult } from './job.js';
import { FetchQueues, FetchWorker } from './queues.js';

// Runs in the redis-cluster test project. BullMQ's scripts touch many keys of a queue at once
// (and build job keys inside Lua from the queue's key prefix), so on a cluster every key of one
// queue must hash to one slot: the `{p<n>}` hash tag in the queue prefix does that.
const t = testRedis('queue-cluster');
const blocking = testConnection({ blocking: true });
afterAll(async () => {
  blocking.disconnect();
  await t.cleanup();
});

const job = (id: string, partition: number): FetchJob => decodeFetchJob({ u: `http://h/${id}`, h: 'h', p: partition, d: 0, x: 0, f: 0, b: 0, l: id });

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every key under `prefix` on every master, with the node that holds it. */
async function keysUnder(prefix: string): Promise<{ key: string; node: string }[]> {
  const out: { key: string; node: string }[] = [];
  for await (const { node, keys } of scanKeys(t.redis, prefixPattern(prefix))) for (const key of keys) out.push({ key, node: `${node.options.port}` });
  return out;
}

const slotOf = async (key: string): Promise<number> => Number(await t.redis.call('CLUSTER', 'KEYSLOT', key));

describe('fetch queues on a Redis Cluster', () => {
  it('add and process jobs of two partitions (done, deferred, retried, dead), each queue in one slot', async () => {
    const namespace = `${t.prefix}-q`;
    const partitions = 2;
    const queues = new FetchQueues(t.redis, { namespace, partitions, attempts: 2 });
    const handled: string[] = [];
    const handler = async (ctx: { id: string; attempt: number }): Promise<JobResult> => {
      handled.push(`${ctx.id}#${ctx.attempt}`);
      if (ctx.id.endsWith('-defer') && handled.filter((h) => h.startsWith(ctx.id)).length === 1) return { outcome: 'defer', until: Date.now() + 100 };
      if (ctx.id.endsWith('-retry') && ctx.attempt === 1) return { outcome: 'retry', reason: 'ERR_FETCH_TIMEOUT: once', delayMs: 50 };
      if (ctx.id.endsWith('-dead')) return { outcome: 'dead', reason: 'ERR_HTTP_4XX: HTTP 404' };
      return { outcome: 'done', summary: {} };
    };
    const workers = Array.from(
      { length: partitions },
      (_, partition) => new FetchWorker(blocking, { namespace, partition, concurrency: 4, stalledMs: 5000, jobs: queues.options }, handler),
    );
    for (const worker of workers) void worker.run();
    try {
      for (let p = 0; p < partitions; p += 1) {
        await queues.addLeased(p, ['done', 'defer', 'retry', 'dead'].map((kind) => job(`p${p}-${kind}`, p)));
      }
      await until(async () => {
        const counts = await queues.counts();
        return counts.completed === 3 * partitions && counts.failed === partitions;
      });
      expect(handled.filter((h) => h.endsWith('-retry#2'))).toHaveLength(partitions);
      expect((await queues.deadLetters()).map((d) => d.id).sort()).toEqual(['p0-dead', 'p1-dead']);

      for (let p = 0; p < partitions; p += 1) {
        const keys = await keysUnder(`${namespace}:{p${p}}:`);
        // wait/active/delayed/completed/failed/events/meta/id and the job hashes, at least.
        expect(keys.length).toBeGreaterThan(8);
        expect(new Set(keys.map((k) => k.node)).size).toBe(1);
        const slots = new Set(await Promise.all(keys.map((k) => slotOf(k.key))));
        expect([...slots]).toEqual([await slotOf(`{p${p}}`)]);
      }
      // Nothing of the queues lives outside the two tagged prefixes.
      expect((await keysUnder(`${namespace}:`)).every((k) => /^[^{]*:\{p[01]\}:/.test(k.key))).toBe(true);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await queues.close();
    }
  });
});
