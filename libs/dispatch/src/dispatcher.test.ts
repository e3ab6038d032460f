import { ManualClock } from '@trawl/core';
import { PolicyFollower, PolicyStore } from '@trawl/crawl';
import { Frontier, type Lease } from '@trawl/frontier';
import { FetchQueues } from '@trawl/queue';
import { testRedis } from '@trawl/redis/testing';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, describe, expect, it } from 'vitest';
import { Dispatcher, jobDataOf } from './dispatcher.js';

/**
 * The window between a dispatcher's claim and its jobs reaching the queue, against real Redis and
 * BullMQ: a dispatcher that dies there leaves leases nobody runs. Without the orphan sweep the
 * URLs wait out the whole lease (TRAWL_LEASE_MS, 5 minutes by default); the scheduler taking the
 * partition over gives them back at once.
 */
const t = testRedis('dispatch');
let n = 0;
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
  await t.cleanup();
});

function setup() {
  const namespace = `${t.prefix}d${(n += 1)}`;
  const clock = new ManualClock(Date.now());
  const frontier = new Frontier(t.redis, { prefix: namespace, partitions: 1, bands: 4, leaseMs: 300_000, fetchHoldMs: 65_000, busyRetryMs: 250, maxUrlsPerHost: 0, clock });
  const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 2 });
  closers.push(() => queues.close());
  const policy = new PolicyFollower(new PolicyStore(t.redis, namespace), 1000, () => clock.now());
  const dispatcher = new Dispatcher({ frontier, queues, policy, clock, logger: silentLogger }, { window: 100, pollMs: 25, leadMs: 0, orphanAgeMs: 2000 });
  return { frontier, queues, clock, dispatcher };
}

const url = (host: string) => ({ url: `http://${host}/`, host, depth: 0, hops: 0, flags: 0, priority: 0.5 });

describe('Dispatcher.reclaimOrphans', () => {
  it('gives back leases whose jobs were never added, at once, and leaves those with jobs alone', async () => {
    const { frontier, queues, clock, dispatcher } = setup();
    await frontier.push([url('a.example'), url('b.example'), url('c.example')]);
    const leases = (await frontier.claim(0, 10)).leases;
    expect(leases).toHaveLength(3);
    // The dead dispatcher added a's job only, then died.
    const a = leases.find((l) => l.host === 'a.example') as Lease;
    await queues.addLeased(0, [jobDataOf(a)]);
    // A claim still in flight (younger than orphanAgeMs) is not touched.
    expect(await dispatcher.reclaimOrphans(0)).toBe(0);
    clock.advance(2500);
    expect(await dispatcher.reclaimOrphans(0)).toBe(2);
    const again = await frontier.claim(0, 10);
    expect(again.leases.map((l) => l.host).sort()).toEqual(['b.example', 'c.example']);
    expect((await frontier.stats()).leased).toBe(3);
  });
});
