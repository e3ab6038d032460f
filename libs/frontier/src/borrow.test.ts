import { ManualClock } from '@trawl/core';
import { testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Frontier, type HostBorrow, type Lease, type PushItem } from './frontier.js';
import { hostKey } from './keys.js';

/**
 * Borrowing another host's gate for one request a rendered page makes, against the real scripts:
 * one try, never a wait; granted only with no token out and the host due within the bound; the
 * return moves the due time and frees the token; nothing of the host's queue, claim or budget
 * changes.
 */
const t: TestRedis = testRedis('borrow');
afterAll(() => t.cleanup());
let clock: ManualClock;
let run = 0;
beforeEach(() => {
  run += 1;
  clock = new ManualClock(1_000_000);
});

const WITHIN = { holdMs: 5000, withinMs: 250 };
const makeFrontier = (idleHostTtlMs = 0) =>
  new Frontier(t.redis, { prefix: `${t.prefix}:${run}`, partitions: 2, bands: 4, leaseMs: 10_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, idleHostTtlMs, clock });
const item = (host: string, path: string): PushItem => ({ host, url: `http://${host}${path}`, depth: 1, hops: 0, flags: 0, priority: 0.5 });
const ticket = (lease: Lease, token: string) => ({ partition: lease.partition, host: lease.host, leaseId: lease.id, token, band: lease.band, entry: lease });
/** A borrow that must be granted, and its token. */
async function granted(f: Frontier, host: string): Promise<string> {
  const borrow: HostBorrow = await f.borrowHost(host, WITHIN);
  if (borrow.kind !== 'granted') throw new Error(`expected a grant for ${host}, got ${JSON.stringify(borrow)}`);
  expect(borrow.token).toMatch(/^borrow:/);
  return borrow.token;
}

describe('borrowHost / returnHost', () => {
  it('grants a free, due host, refuses a second borrow while the token is out, and frees it on return', async () => {
    const f = makeFrontier();
    const host = 'cdn.example';
    expect(await f.borrowHost(host, WITHIN)).toEqual({ kind: 'granted', token: expect.stringMatching(/^borrow:/), dueAt: 0, health: { streak: 0, backoffMs: 0 } });
    const raw = async () => t.redis.hgetall(hostKey(f.keysOf(f.partitionOf(host)), host));
    const token = (await raw()).tok as string;
    expect((await f.hostState(host)).fetching).toBe(true);
    expect(await f.borrowHost(host, WITHIN)).toEqual({ kind: 'busy', at: clock.now() + 5000 });
    clock.advance(30);
    expect(await f.returnHost(host, token, clock.now() + 1000)).toBe(true);
    expect(await f.hostState(host)).toMatchObject({ fetching: false, due: clock.now() + 1000, queued: 0, total: 0 });
    // No token leaks: the hash only has the due time and the gap left.
    expect(Object.keys(await raw()).sort()).toEqual(['due', 'gap']);
  });

  it('refuses a host not due within the bound, and grants it once it is, with its due time to wait for', async () => {
    const f = makeFrontier();
    const host = 'api.example';
    await f.returnHost(host, await granted(f, host), clock.now() + 1000);
    expect(await f.borrowHost(host, WITHIN)).toEqual({ kind: 'not-due', at: clock.now() + 1000 });
    clock.advance(800); // due in 200 ms: within the bound
    expect(await f.borrowHost(host, WITHIN)).toMatchObject({ kind: 'granted', dueAt: clock.now() + 200 });
    const token = (await t.redis.hget(hostKey(f.keysOf(f.partitionOf(host)), host), 'tok')) as string;
    // A return never moves the due time backward.
    await f.returnHost(host, token, 0);
    expect((await f.hostState(host)).due).toBe(clock.now() + 200);
  });

  it('refuses while a page fetch holds the token; a page fetch finding a borrowed token asks again shortly', async () => {
    const f = makeFrontier();
    const host = 'site.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1')]);
    const [lease] = (await f.claim(p, 1)).leases as [Lease];
    expect(await f.acquire(ticket(lease, 'fetch'))).toMatchObject({ kind: 'ok' });
    expect(await f.borrowHost(host, WITHIN)).toEqual({ kind: 'busy', at: clock.now() + 30_000 });
    await f.release(ticket(lease, 'fetch'), clock.now() + 100);
    clock.advance(100);
    await f.push([item(host, '/2')]);
    const [next] = (await f.claim(p, 1)).leases as [Lease];
    // A claimed lease that is not fetching does not refuse a borrow…
    clock.advance(1);
    const token = await granted(f, host);
    // …and its fetch waits for the borrowed token: again after busyRetryMs, not after the borrow's hold.
    expect(await f.acquire(ticket(next, 'fetch2'))).toEqual({ kind: 'busy', at: clock.now() + 500 });
    await f.returnHost(host, token, clock.now() + 500);
    expect(await f.acquire(ticket(next, 'fetch2'))).toEqual({ kind: 'not-due', at: clock.now() + 500 });
    clock.advance(501);
    expect(await f.acquire(ticket(next, 'fetch2'))).toMatchObject({ kind: 'ok' });
    // Its queue and budget were not touched by the borrow.
    expect(await f.hostState(host)).toMatchObject({ total: 2, claim: next.id });
  });

  it('a lapsed borrow (its borrower died) frees the host after its hold; its late return frees nothing', async () => {
    const f = makeFrontier();
    const host = 'late.example';
    const dead = await granted(f, host);
    clock.advance(5001);
    const live = await granted(f, host);
    expect(await f.returnHost(host, dead, clock.now() + 100)).toBe(false);
    expect((await f.hostState(host)).fetching).toBe(true);
    expect(await f.returnHost(host, live, clock.now() + 100)).toBe(true);
    expect((await f.hostState(host)).fetching).toBe(false);
  });

  it('refuses a paused host', async () => {
    const f = makeFrontier();
    await f.pauseHosts(['paused.example']);
    expect(await f.borrowHost('paused.example', WITHIN)).toEqual({ kind: 'paused' });
    expect((await f.hostState('paused.example')).fetching).toBe(false);
  });

  it('a host the crawl never queued keeps its state only until past its due time; a crawled host by the idle TTL', async () => {
    const f = makeFrontier(60 * 60_000);
    const key = (host: string) => hostKey(f.keysOf(f.partitionOf(host)), host);
    await f.returnHost('out.example', await granted(f, 'out.example'), clock.now() + 2000);
    const ttl = await t.redis.pttl(key('out.example'));
    expect(ttl).toBeGreaterThan(2000);
    expect(ttl).toBeLessThanOrEqual(62_000);

    const host = 'in.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1')]);
    const [lease] = (await f.claim(p, 1)).leases as [Lease];
    await f.acquire(ticket(lease, 'fetch'));
    await f.release(ticket(lease, 'fetch'), clock.now() + 100);
    await f.ack(p, [lease.id]);
    clock.advance(200);
    await f.returnHost(host, await granted(f, host), clock.now() + 100);
    expect(await t.redis.pttl(key(host))).toBeGreaterThan(62_000);
  });
});
