import { createRedis } from '@trawl/redis';
import { TEST_REDIS_URL, testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeFetchJob, type FetchJobData } from './job.js';
import { FetchQueues, FetchWorker } from './queues.js';
import { discoverQueues, knownQueues, openQueue } from './registry.js';
import { freshLeaseRetry, isFetchQueueName } from './retry.js';
import { SeedsQueue } from './seeds.js';

const t = testRedis('queue_retry');
const blocking = createRedis(TEST_REDIS_URL, { blocking: true });
afterAll(async () => {
  blocking.disconnect();
  await t.cleanup();
});

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('freshLeaseRetry', () => {
  it('re-runs a dead-lettered fetch job with fresh attempts under a new, explicit lease id', async () => {
    const namespace = `${t.prefix}a`;
    const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 2 });
    const seen: { lease: string | null; attempt: number }[] = [];
    const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 1, stalledMs: 5000, jobs: queues.options }, async (ctx) => {
      seen.push({ lease: ctx.job.leaseId, attempt: ctx.attempt });
      return seen.length === 1 ? { outcome: 'dead', reason: 'ERR_HTTP_5XX: HTTP 500' } : { outcome: 'done', summary: {} };
    });
    void worker.run();
    try {
      const data: FetchJobData = { u: 'http://h/x', h: 'h', p: 0, d: 0, x: 0, f: 0, b: 0, l: 'p0-41' };
      await queues.addLeased(0, [decodeFetchJob(data)]);
      await until(async () => (await queues.counts()).failed === 1);
      const job = await queues.queue(0).getJob('p0-41');
      await freshLeaseRetry(job!);
      await until(async () => (await queues.counts()).completed === 1);
      expect(seen[0]).toEqual({ lease: 'p0-41', attempt: 1 });
      expect(seen[1]?.attempt).toBe(1);
      expect(seen[1]?.lease).toMatch(/^r-[0-9a-f-]{36}$/);
      // The rest of the payload is untouched.
      expect((await queues.queue(0).getJob('p0-41'))?.data).toMatchObject({ u: 'http://h/x', h: 'h', p: 0 });
    } finally {
      await worker.close();
      await queues.close();
    }
  });

  it('knows the fetch queues by name', () => {
    expect(isFetchQueueName('fetch-p0')).toBe(true);
    expect(isFetchQueueName('fetch-p12')).toBe(true);
    expect(isFetchQueueName('fetch-p')).toBe(false);
    expect(isFetchQueueName('seeds')).toBe(false);
    expect(isFetchQueueName('fetch-p01')).toBe(false);
  });
});

describe('queue registry', () => {
  it('lists the known queues and discovers others under the namespace by prefix', async () => {
    const namespace = `${t.prefix}b`;
    expect(knownQueues(namespace, 2).map((q) => q.name)).toEqual(['seeds', 'sweeps', 'render', 'fetch-p0', 'fetch-p1']);
    const seeds = new SeedsQueue(t.redis, namespace);
    await seeds.add({ urls: ['http://a/'] });
    // A queue trawl does not know by name (an operator's own): found by its prefix.
    const other = openQueue(t.redis, { name: 'reports', prefix: `${namespace}:{reports}` });
    await other.add('weekly', {});
    // Not queues: other trawl keys that happen to end in :meta or :id.
    await t.redis.hset(`${namespace}:{s0}:seen:meta`, 'k', '7');
    await t.redis.hset(`${namespace}:{p0}:h:id`, 'due', '0');
    const found = await discoverQueues(t.redis, namespace, 1);
    expect(found.map((q) => `${q.prefix}|${q.name}`).sort()).toEqual(
      [`${namespace}:{p0}|fetch-p0`, `${namespace}:{seeds}|seeds`, `${namespace}:{sweeps}|sweeps`, `${namespace}:{render}|render`, `${namespace}:{reports}|reports`].sort(),
    );
    await other.close();
    await seeds.close();
  });
});
