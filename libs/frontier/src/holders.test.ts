import { ManualClock } from '@trawl/core';
import { testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { UrlFlag } from './entry.js';
import { Frontier, type Lease, type PushItem } from './frontier.js';
import { frontierKeys } from './keys.js';

/**
 * Holds that end with a worker's heartbeat: what a worker process takes at the gate (its leases
 * and host tokens) is recorded as its own, and when its heartbeat lapses `releaseHolder` frees it
 * at once. A worker that was only paused and comes back finds its holds gone: its jobs are stale,
 * its hand-offs refused, its releases free nothing another holds.
 */
const t: TestRedis = testRedis('holders');
afterAll(() => t.cleanup());
let clock: ManualClock;
let run = 0;
beforeEach(() => {
  run += 1;
  clock = new ManualClock(1_000_000);
});

const prefix = () => `${t.prefix}:${run}`;
const worker = (holder: string) =>
  new Frontier(t.redis, { prefix: prefix(), partitions: 1, bands: 4, leaseMs: 300_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, clock, holder });
const item = (host: string, path: string): PushItem => ({ host, url: `http://${host}${path}`, depth: 1, hops: 0, flags: 0, priority: 0.5 });
const ticket = (lease: Lease, token: string) => ({ partition: lease.partition, host: lease.host, leaseId: lease.id, token, band: lease.band, entry: lease });
const byHost = (leases: Lease[]) => new Map(leases.map((l) => [l.host, l]));
const holders = () => t.redis.hgetall(frontierKeys(prefix(), 0).holders);

describe('releaseHolder', () => {
  it('frees a dead worker’s leases and host tokens at once; the host is due its last delay later; handed and other workers’ leases stay', async () => {
    const a = worker('worker-a');
    const b = worker('worker-b');
    // Host a was fetched before, with a delay of 1.5 s.
    await a.push([item('a', '/0')]);
    const [first] = (await a.claim(0, 1)).leases as [Lease];
    expect(await a.acquire(ticket(first, 'a0'))).toMatchObject({ kind: 'ok' });
    await a.release(ticket(first, 'a0'), clock.now() + 1500);
    await a.ack(0, [first.id]);
    clock.advance(1500);

    await a.push([item('a', '/1'), item('b', '/1'), item('c', '/1')]);
    const leases = byHost((await a.claim(0, 10)).leases);
    const [la, lb, lc] = ['a', 'b', 'c'].map((h) => leases.get(h) as Lease) as [Lease, Lease, Lease];
    // Worker A is mid-request on host a, and has handed host c's page to the process stage.
    expect(await a.acquire(ticket(la, 'a1'))).toMatchObject({ kind: 'ok' });
    expect(await a.acquire(ticket(lc, 'c1'))).toMatchObject({ kind: 'ok' });
    await a.release(ticket(lc, 'c1'), clock.now() + 1000, { fetchedAliveUntil: clock.now() + 3000 });
    expect(await a.handOff(0, lc.id, 'c1', '{}')).not.toBeNull();
    // Worker B holds host b.
    expect(await b.acquire(ticket(lb, 'b1'))).toMatchObject({ kind: 'ok' });
    expect(Object.keys(await holders()).sort()).toEqual([la.id, lb.id].sort());

    // Worker A's heartbeat lapses.
    clock.advance(100);
    expect(await b.releaseHolder('worker-a')).toBe(1);
    expect(Object.keys(await holders())).toEqual([lb.id]);
    const stats = await b.stats();
    expect(stats.leased).toBe(2); // b (held by B) and c (handed)
    expect(stats.queued).toBe(1);
    // Host a is due its last delay after the freeing, not when A's lease or token would have run out.
    expect((await b.claim(0, 10)).leases).toEqual([]);
    clock.advance(1499);
    expect((await b.claim(0, 10)).leases).toEqual([]);
    clock.advance(1);
    const [again] = (await b.claim(0, 10)).leases as [Lease];
    expect(again.url).toBe('http://a/1');
    expect(again.flags & UrlFlag.Verify).toBe(UrlFlag.Verify);
    expect(await b.acquire(ticket(again, 'a2'))).toMatchObject({ kind: 'ok' });

    // Worker A was only paused: it comes back and finds its holds gone.
    expect(await a.acquire(ticket(la, 'a1'))).toEqual({ kind: 'stale' });
    expect(await a.release(ticket(la, 'a1'), clock.now() + 1000)).toBe(false);
    expect(await a.handOff(0, la.id, 'a1', '{}')).toBeNull();
    // B's hold on host a survives A's late release: the host is still B's, so another lease waits.
    await b.push([item('a', '/2')]);
    clock.advance(5000);
    expect((await b.claim(0, 10)).leases.map((l) => l.url)).toEqual([]);
    expect(await b.release(ticket(again, 'a2'), clock.now() + 1000)).toBe(true);

    // Nothing of A's is freed twice.
    expect(await b.releaseHolder('worker-a')).toBe(0);
  });

  it('forgets a hold once its lease is handed off, acknowledged or requeued, and frees nothing for a worker that holds nothing', async () => {
    const a = worker('worker-a');
    await a.push([item('a', '/1'), item('b', '/1'), item('c', '/1')]);
    const leases = byHost((await a.claim(0, 10)).leases);
    for (const [host, lease] of leases) expect(await a.acquire(ticket(lease, `${host}-tok`))).toMatchObject({ kind: 'ok' });
    expect(Object.keys(await holders())).toHaveLength(3);
    const [la, lb, lc] = ['a', 'b', 'c'].map((h) => leases.get(h) as Lease) as [Lease, Lease, Lease];
    await a.release(ticket(la, 'a-tok'), clock.now() + 100, { fetchedAliveUntil: clock.now() + 3000 });
    await a.handOff(0, la.id, 'a-tok', '{}');
    await a.release(ticket(lb, 'b-tok'), clock.now() + 100);
    await a.ack(0, [lb.id]);
    await a.requeue(0, [lc.id]);
    expect(await holders()).toEqual({});
    expect(await a.releaseHolder('worker-a')).toBe(0);
    expect(await a.releaseHolder('nobody')).toBe(0);
  });

  it('frees the leases of the jobs the dead worker had taken but not yet brought to the gate; handed ones stay', async () => {
    const a = worker('worker-a');
    await a.push([item('a', '/1'), item('a', '/2'), item('b', '/1')]);
    const leases = byHost((await a.claim(0, 10)).leases);
    const [la, lb] = ['a', 'b'].map((h) => leases.get(h) as Lease) as [Lease, Lease];
    // b's job got to the gate, fetched, and handed its page off; a's job never reached the gate.
    expect(await a.acquire(ticket(lb, 'worker-a|p0|x:2'))).toMatchObject({ kind: 'ok' });
    await a.release(ticket(lb, 'worker-a|p0|x:2'), clock.now() + 100, { fetchedAliveUntil: clock.now() + 3000 });
    await a.handOff(0, lb.id, 'worker-a|p0|x:2', '{}');
    expect(await holders()).toEqual({});
    // Host a is dispatched to the dead worker's job: nothing else of it goes out.
    clock.advance(60_000);
    expect((await a.claim(0, 10)).leases).toEqual([]);
    const jobs = new Map([[0, [{ leaseId: la.id, token: 'worker-a|p0|x:1' }, { leaseId: lb.id, token: 'worker-a|p0|x:2' }]]]);
    expect(await a.releaseHolder('worker-a', jobs)).toBe(1);
    expect((await a.claim(0, 10)).leases.map((l) => l.url)).toEqual(['http://a/1']);
    expect((await a.stats()).leased).toBe(2); // a/1 again, and b's handed lease
    expect(await a.acquire(ticket(la, 'worker-a|p0|x:1'))).toEqual({ kind: 'stale' });
  });

  it('records no hold for a frontier without a holder (a single-process crawl)', async () => {
    const f = worker('');
    await f.push([item('a', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    expect(await f.acquire(ticket(lease, 'tok'))).toMatchObject({ kind: 'ok' });
    expect(await holders()).toEqual({});
  });
});
