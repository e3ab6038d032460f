import { loadConfig } from '@trawl/config';
import { ManualClock } from '@trawl/core';
import { PolicyFollower, policyFromConfig, PolicyStore } from '@trawl/model';
import { Frontier, type Lease } from '@trawl/frontier';
import { FetchQueues, ReadyJobs } from '@trawl/queue';
import { testRedis } from '@trawl/redis/testing';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, describe, expect, it } from 'vitest';
import { Dispatcher, fetchJobOf } from './dispatcher.js';

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

function setup(window = 100, backlogMax?: number, orphanPageSize?: number) {
  const namespace = `${t.prefix}d${(n += 1)}`;
  const clock = new ManualClock(Date.now());
  const frontier = new Frontier(t.redis, { prefix: namespace, partitions: 1, bands: 4, leaseMs: 300_000, fetchHoldMs: 65_000, busyRetryMs: 250, maxUrlsPerHost: 0, clock });
  const queues = new FetchQueues(t.redis, { namespace, partitions: 1, attempts: 2 });
  closers.push(() => queues.close());
  const store = new PolicyStore(t.redis, namespace);
  const policy = new PolicyFollower(store, 1000, () => clock.now());
  // The queue's depth, read through a counter: the dispatcher's backpressure reads.
  const depthReads = { n: 0 };
  const counted = {
    waiting: (p: number) => ((depthReads.n += 1), queues.waiting(p)),
    addLeased: queues.addLeased.bind(queues),
    jobsExist: queues.jobsExist.bind(queues),
  };
  const dispatcher = new Dispatcher({ frontier, queues: counted, policy, clock, logger: silentLogger }, { window, pollMs: 25, leadMs: 0, orphanAgeMs: 2000, backlogMax, orphanPageSize });
  // A worker at work: takes up to `count` jobs off the ready list and finishes them.
  const ready = new ReadyJobs(t.redis, namespace);
  const work = async (count: number): Promise<void> => {
    for (const job of await ready.take(0, 'worker@test|p0|c', null, count)) await ready.finish(0, 'worker@test|p0|c', job.id, true);
  };
  return { frontier, queues, clock, dispatcher, store, depthReads, work };
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
    await queues.addLeased(0, [fetchJobOf(a)]);
    // A claim still in flight (younger than orphanAgeMs) is not touched.
    expect(await dispatcher.reclaimOrphans(0)).toBe(0);
    clock.advance(2500);
    expect(await dispatcher.reclaimOrphans(0)).toBe(2);
    const again = await frontier.claim(0, 10);
    expect(again.leases.map((l) => l.host).sort()).toEqual(['b.example', 'c.example']);
    expect((await frontier.stats()).leased).toBe(3);
  });

  it('looks at every old enough lease, a page at a time, however many have jobs', async () => {
    // Pages of two: the sweep must read past leases whose jobs wait in the queue, and past the
    // places the leases it gives back leave empty.
    const { frontier, queues, clock, dispatcher } = setup(100, undefined, 2);
    const hosts = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((h) => `${h}.example`);
    await frontier.push(hosts.map(url));
    const leases = (await frontier.claim(0, 10)).leases;
    expect(leases).toHaveLength(7);
    // Oldest first is lease id order here (one claim, one expiry): jobs for the 1st, 2nd, 4th
    // and 6th; the 3rd, 5th and 7th are orphans.
    const byId = [...leases].sort((x, y) => (x.id < y.id ? -1 : 1));
    await queues.addLeased(0, [0, 1, 3, 5].map((i) => fetchJobOf(byId[i] as Lease)));
    clock.advance(2500);
    expect(await dispatcher.reclaimOrphans(0)).toBe(3);
    const again = await frontier.claim(0, 10);
    expect(again.leases.map((l) => l.host).sort()).toEqual([2, 4, 6].map((i) => (byId[i] as Lease).host).sort());
  });

  it('finds the orphans behind a thousand leases whose jobs wait', async () => {
    const { frontier, queues, clock, dispatcher } = setup();
    await frontier.push(Array.from({ length: 1002 }, (_, i) => url(`h${i}.example`)));
    const leases = (await frontier.claim(0, 2000)).leases;
    expect(leases).toHaveLength(1002);
    // All expire together, so the set orders them by id: the first 1000 have jobs.
    const byId = [...leases].sort((x, y) => (x.id < y.id ? -1 : 1));
    await queues.addLeased(0, byId.slice(0, 1000).map(fetchJobOf));
    clock.advance(2500);
    expect(await dispatcher.reclaimOrphans(0)).toBe(2);
    expect((await frontier.stats()).queued).toBe(2);
  });

  it('never gives back a lease whose URL was fetched, though its fetch job is gone (a page handed to a render stage)', async () => {
    const { frontier, queues, clock, dispatcher, work } = setup();
    await frontier.push([url('h.example')]);
    const [lease] = (await frontier.claim(0, 10)).leases as [Lease];
    await queues.addLeased(0, [fetchJobOf(lease)]);
    await work(1);
    expect(await queues.jobsExist(0, [lease.id])).toEqual([false]);
    const ticket = { partition: 0, host: lease.host, leaseId: lease.id, token: 'tok', band: lease.band, entry: lease };
    expect(await frontier.acquire(ticket)).toMatchObject({ kind: 'ok' });
    // Fetched, and handed with its host to a render stage: the fetch job is finished, the lease
    // lives on with the render, renewed only every third of its time.
    await frontier.release(ticket, clock.now() + 500, { leaseUntil: clock.now() + 300_000, fetchedAliveUntil: clock.now() + 300_000, keepHost: true });
    await frontier.markHandedToRender(0, lease.id, 'tok', clock.now() + 300_000);
    clock.advance(2500);
    expect(await dispatcher.reclaimOrphans(0)).toBe(0);
    expect((await frontier.stats()).leased).toBe(1);
    expect((await frontier.claim(0, 10)).leases).toEqual([]);
  });
});

describe('Dispatcher: a partition taken over', () => {
  it('gives back the leases its predecessor claimed just before dying, once they are old enough to be orphans', async () => {
    const { frontier, clock, dispatcher } = setup();
    await frontier.push([url('d.example'), url('e.example')]);
    // The predecessor claimed these and died before adding their jobs; the partition is taken
    // over at once, while they are younger than orphanAgeMs.
    expect((await frontier.claim(0, 10)).leases).toHaveLength(2);
    dispatcher.startPartition(0);
    try {
      await new Promise((r) => setTimeout(r, 150));
      expect((await frontier.stats()).queued).toBe(0);
      clock.advance(2100);
      const end = Date.now() + 3000;
      while ((await frontier.stats()).queued !== 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect((await frontier.stats()).queued).toBe(2);
    } finally {
      await dispatcher.stop();
    }
  });
});

describe('Dispatcher.tick: the window', () => {
  const publish = (store: PolicyStore) => store.publish(policyFromConfig(loadConfig({ env: {} }), ['http://h0.example/']));

  it('never puts more than the window in the queue', async () => {
    const { frontier, queues, clock, dispatcher, store, work } = setup(10);
    await publish(store);
    await frontier.push(Array.from({ length: 40 }, (_, i) => url(`h${i}.example`)));
    await dispatcher.tick(0);
    expect(await queues.waiting(0)).toBe(10);
    for (let i = 0; i < 3; i += 1) await dispatcher.tick(0);
    expect(await queues.waiting(0)).toBe(10);
    // Workers take 3 jobs at a time: each tick fills the room they left, never more.
    for (let i = 0; i < 6; i += 1) {
      await work(3);
      clock.advance(100);
      await dispatcher.tick(0);
      expect(await queues.waiting(0)).toBe(10);
    }
  });

  it('reads the queue depth when its last read is a second old or leaves less than half the window, not per claim', async () => {
    const { frontier, queues, clock, dispatcher, store, depthReads, work } = setup(10);
    await publish(store);
    const round = async (label: string, advanceMs: number) => {
      await frontier.push(Array.from({ length: 3 }, (_, i) => url(`${label}${i}.example`)));
      clock.advance(advanceMs);
      await dispatcher.tick(0);
      expect(await queues.waiting(0)).toBe(3);
      await work(100); // workers keep the queue empty
      return depthReads.n;
    };
    expect(await round('a', 0)).toBe(1); // nothing known: read
    expect(await round('b', 10)).toBe(1); // room 10 − 0 − 3 added: no read
    expect(await round('c', 10)).toBe(2); // room 10 − 0 − 6 < half the window: read
    expect(await round('d', 10)).toBe(2);
    expect(await round('e', 1000)).toBe(3); // the read is a second old: read
  });
});

describe('Dispatcher.tick: backpressure from the process stage', () => {
  it('claims less as the process backlog grows, nothing at TRAWL_PROCESS_BACKLOG_MAX, and picks up again as it drains', async () => {
    const { frontier, queues, clock, dispatcher, store, work } = setup(20, 100);
    await store.publish(policyFromConfig(loadConfig({ env: {} }), ['http://h0.example/']));
    await frontier.push(Array.from({ length: 80 }, (_, i) => url(`h${i}.example`)));
    const stream = frontier.keysOf(0).process;
    // Pages handed to the process stage and not yet recorded (as handOff adds them).
    const backlog = async (n: number) => {
      await t.redis.del(stream);
      for (let i = 0; i < n; i += 1) await t.redis.xadd(stream, '*', 'd', '{}');
    };
    const claimed = async () => {
      const before = await queues.waiting(0);
      clock.advance(1500); // past the depth read's freshness
      await dispatcher.tick(0);
      const added = (await queues.waiting(0)) - before;
      await work(1000); // workers keep the fetch queue empty
      return added;
    };
    await backlog(100);
    expect(await claimed()).toBe(0);
    await backlog(150);
    expect(await claimed()).toBe(0);
    await backlog(50);
    expect(await claimed()).toBe(10); // half the backlog: half the window
    await backlog(0);
    expect(await claimed()).toBe(20);
  });
});
