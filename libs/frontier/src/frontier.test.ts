import { ManualClock } from '@trawl/core';
import { testConnection, testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { deleteByPrefix, loadScript } from '@trawl/redis';
import { variantKey } from '@trawl/url';
import { decodeEntry, encodeEntry, UrlFlag } from './entry.js';
import { Frontier, type FrontierOptions, type Lease, type PushItem } from './frontier.js';

let clock: ManualClock;
let run = 0;

function makeFrontier(overrides: Partial<FrontierOptions> = {}): Frontier {
  return new Frontier(t.redis, {
    prefix: `${t.prefix}:${run}`,
    partitions: 1,
    bands: 4,
    leaseMs: 60_000,
    fetchHoldMs: 30_000,
    busyRetryMs: 500,
    maxUrlsPerHost: 0,
    clock,
    ...overrides,
  });
}

const item = (host: string, path: string, priority = 0.5, depth = 1): PushItem => ({
  host,
  url: `http://${host}${path}`,
  depth,
  hops: 0,
  flags: 0,
  priority,
});

const ticket = (lease: Lease, token = 'tok-1') => ({
  partition: lease.partition,
  host: lease.host,
  leaseId: lease.id,
  token,
  band: lease.band,
  entry: lease,
});

/**
 * A lease of host a (which has a second URL queued) whose first attempt ('slow', fetch hold 3 s)
 * passed the gate and lapsed mid-fetch, and whose redelivery ('next') then passed it.
 */
async function takenOverMidFetch(f: Frontier): Promise<Lease> {
  await f.push([item('a', '/1'), item('a', '/2')]);
  const [lease] = (await f.claim(0, 1)).leases as [Lease];
  expect(await f.acquire(ticket(lease, 'slow'))).toMatchObject({ kind: 'ok' });
  clock.advance(3000);
  expect(await f.acquire(ticket(lease, 'next'))).toMatchObject({ kind: 'ok' });
  return lease;
}

const t: TestRedis = testRedis('frontier');
afterAll(() => t.cleanup());
beforeEach(() => {
  run += 1;
  clock = new ManualClock(1_000_000);
});

describe('entries', () => {
  it.each([
    ['http://a.example/x?y=1', 'a.example', '3 2 5 /x?y=1'],
    ['https://a.example/', 'a.example', '3 2 1029 /'],
    ['https://a.example:8443/p q', 'a.example:8443', '3 2 1029 /p q'],
    ['http://other.example/x', 'a.example', '3 2 5 http://other.example/x'],
    ['http://a.example.evil/x', 'a.example', '3 2 5 http://a.example.evil/x'],
  ])('stores %s on host %s as %j and reads it back', (url, host, stored) => {
    const e = { url, depth: 3, hops: 2, flags: 5 };
    expect(encodeEntry(e, host)).toBe(stored);
    expect(decodeEntry(encodeEntry(e, host), host)).toEqual(e);
  });

  it('keeps a seed\'s own depth limit beside the depth', () => {
    const e = { url: 'http://a.example/x', depth: 1, maxDepth: 4, hops: 0, flags: 0 };
    expect(encodeEntry(e, 'a.example')).toBe('1/4 0 0 /x');
    expect(decodeEntry('1/4 0 0 /x', 'a.example')).toEqual(e);
    expect(encodeEntry({ ...e, maxDepth: null }, 'a.example')).toBe('1 0 0 /x');
  });

  it('rejects a malformed entry', () => {
    expect(() => decodeEntry('garbage', 'h')).toThrow(/malformed/);
  });
});

describe('Frontier push and claim', () => {
  it('claims at most one URL per host, highest band first, then in discovery order', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1', 0.1), item('a', '/2', 0.9), item('a', '/3', 0.9), item('b', '/1')]);
    const first = await f.claim(0, 10);
    expect(first.leases.map((l) => l.url).sort()).toEqual(['http://a/2', 'http://b/1']);
    // a is leased: nothing more from it until it is released.
    expect((await f.claim(0, 10)).leases).toEqual([]);
    const leaseA = first.leases.find((l) => l.host === 'a') as Lease;
    expect(await f.acquire(ticket(leaseA))).toMatchObject({ kind: 'ok' });
    await f.release(ticket(leaseA), clock.now() + 1000);
    expect((await f.claim(0, 10)).leases).toEqual([]); // not due yet
    clock.advance(1000);
    const next = await f.claim(0, 10);
    expect(next.leases.map((l) => l.url)).toEqual(['http://a/3']);
  });

  it('queues an item that names its band in that band, whatever its priority (clamped to the bands there are)', async () => {
    const f = makeFrontier({ bands: 8 });
    await f.push([{ ...item('a', '/kept', 0.9), band: 1 }, { ...item('b', '/high', 0.1), band: 99 }, { ...item('c', '/low', 0.9), band: -3 }, item('d', '/plain', 0.9)]);
    const bands = new Map((await f.claim(0, 10)).leases.map((l) => [l.url, l.band]));
    expect(Object.fromEntries(bands)).toEqual({ 'http://a/kept': 1, 'http://b/high': 7, 'http://c/low': 0, 'http://d/plain': 7 });
  });

  it('reports the next due time so the dispatcher can sleep exactly', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(lease));
    await f.release(ticket(lease), clock.now() + 2500);
    const claim = await f.claim(0, 5);
    expect(claim.leases).toEqual([]);
    expect(claim.nextDueAt).toBe(clock.now() + 2500);
  });

  it('claims hosts due within the lead, whose jobs then wait at the gate until the due time', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2')]);
    const [l1] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(l1));
    await f.release(ticket(l1), clock.now() + 1000);
    clock.advance(970);
    expect((await f.claim(0, 5, { leadMs: 20 })).leases).toEqual([]);
    const [l2] = (await f.claim(0, 5, { leadMs: 30 })).leases as [Lease];
    expect(l2.url).toBe('http://a/2');
    expect(await f.acquire(ticket(l2, 'early'))).toEqual({ kind: 'not-due', at: clock.now() + 30 });
    clock.advance(30);
    expect(await f.acquire(ticket(l2, 'early'))).toMatchObject({ kind: 'ok' });
  });

  it('asked as of a moment ahead (`at`), the gate answers for then: the host due then is granted, one due later is not', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2'), item('a', '/3')]);
    const [l1] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(l1));
    await f.release(ticket(l1), clock.now() + 1000);
    clock.advance(996);
    const [l2] = (await f.claim(0, 5, { leadMs: 30 })).leases as [Lease];
    expect(await f.acquire(ticket(l2, 'a'), { at: clock.now() + 3 })).toEqual({ kind: 'not-due', at: clock.now() + 4 });
    expect(await f.acquire(ticket(l2, 'b'), { at: clock.now() + 4 })).toMatchObject({ kind: 'ok' });
    // A moment in the past counts as now.
    await f.release(ticket(l2, 'b'), clock.now() + 1000);
    const [l3] = (await f.claim(0, 5, { leadMs: 2000 })).leases as [Lease];
    expect(await f.acquire(ticket(l3), { at: clock.now() - 5000 })).toMatchObject({ kind: 'not-due' });
  });

  it('keeps depth, hops and flags through the queue', async () => {
    const f = makeFrontier();
    await f.push([{ host: 'h', url: 'http://h/x', depth: 7, hops: 2, flags: 4, priority: 1 }]);
    const [lease] = (await f.claim(0, 1)).leases;
    expect(lease).toMatchObject({ url: 'http://h/x', depth: 7, hops: 2, flags: 4, band: 3, host: 'h' });
  });

  it('refuses URLs over the per-host budget', async () => {
    const f = makeFrontier({ maxUrlsPerHost: 2 });
    expect(await f.push([item('a', '/1'), item('a', '/2'), item('a', '/3'), item('b', '/1')])).toEqual({
      pushed: 3,
      refused: 1,
      refusedVariants: 0,
      refusals: [{ index: 2, reason: 'host-budget' }],
      spills: [],
    });
    expect((await f.stats()).queued).toBe(3);
  });

  it('caps the query variants of one path (calendars, faceted search)', async () => {
    const f = makeFrontier();
    const v = (path: string, key: string | null) => ({ ...item('a', path), variantKey: key });
    const result = await f.push(
      [v('/cal?d=1', 'a/cal'), v('/cal?d=2', 'a/cal'), v('/cal?d=3', 'a/cal'), v('/s?q=1', 'a/s'), v('/plain', null)],
      { maxQueryVariants: 2 },
    );
    expect(result).toEqual({ pushed: 4, refused: 0, refusedVariants: 1, refusals: [{ index: 2, reason: 'query-variants' }], spills: [] });
    expect(await f.push([v('/cal?d=4', 'a/cal')], { maxQueryVariants: 2 })).toMatchObject({ pushed: 0, refusedVariants: 1 });
    expect(await f.push([v('/cal?d=4', 'a/cal')], { maxQueryVariants: 0 })).toMatchObject({ pushed: 1 });
  });

  it('caps a date pattern (a calendar, in all its forms) at its own limit, apart from query variants', async () => {
    const f = makeFrontier();
    const day = (path: string) => ({ ...item('a', path), variantKey: variantKey(`http://a${path}`) });
    const calendar = ['/cal/2031/05/17', '/cal?d=2031-05-18', '/cal/2031/05/19', '/cal?d=2031-05-20'];
    const limits = { maxQueryVariants: 10, maxDateVariants: 3 };
    const result = await f.push([...calendar.map(day), day('/search?q=1'), day('/search?q=2')], limits);
    expect(result).toEqual({ pushed: 5, refused: 0, refusedVariants: 1, refusals: [{ index: 3, reason: 'query-variants' }], spills: [] });
    // Each dated post is its own pattern: never capped by the calendar's share.
    expect(await f.push(['/blog/2026/11/28/a', '/blog/2026/11/29/b', '/blog/2026/11/30/c', '/blog/2026/12/01/d'].map(day), limits)).toMatchObject({ pushed: 4 });
    expect(await f.push([day('/cal/2031/05/21')], { ...limits, maxDateVariants: 0 })).toMatchObject({ pushed: 1 });
  });

  it('splits hosts across partitions by the ring, and each partition serves its own hosts', async () => {
    const f = makeFrontier({ partitions: 4 });
    const hosts = Array.from({ length: 40 }, (_, i) => `host${i}.example`);
    await f.push(hosts.map((h) => item(h, '/')));
    const claimed: string[] = [];
    for (let p = 0; p < 4; p += 1) {
      const { leases } = await f.claim(p, 100);
      for (const l of leases) expect(f.partitionOf(l.host)).toBe(p);
      claimed.push(...leases.map((l) => l.host));
    }
    expect(claimed.sort()).toEqual([...hosts].sort());
    const stats = await f.stats();
    expect(stats.partitions.filter((p) => p.leased > 0).length).toBeGreaterThan(1);
    expect(stats.leased).toBe(40);
  });
});

describe('the host gate', () => {
  it('lets a dispatched lease fetch, and holds its token against a second attempt', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    expect(await f.acquire(ticket(lease, 'try-1'))).toMatchObject({ kind: 'ok' });
    // The same lease redelivered (a stalled job) while the first attempt still fetches.
    const second = await f.acquire(ticket(lease, 'try-2'));
    expect(second.kind).toBe('busy');
    await f.release(ticket(lease, 'try-1'), clock.now() + 100);
    clock.advance(100);
    expect(await f.acquire(ticket(lease, 'try-2'))).toMatchObject({ kind: 'ok' });
  });

  it('delays a job whose host is not yet due, and holds the host for it', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2')]);
    const [l1] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(l1));
    await f.release(ticket(l1), clock.now() + 5000);
    // A manual job for a/2 arrives before a's due time: adopted, then told to wait.
    const manual = { partition: 0, host: 'a', leaseId: 'manual-1', token: 'm1', band: 2, entry: { url: 'http://a/9', depth: 0, hops: 0, flags: 0 } };
    expect(await f.acquire(manual)).toEqual({ kind: 'not-due', at: clock.now() + 5000 });
    clock.advance(5000);
    // The manual job holds the host, so the dispatcher cannot hand out a/2 concurrently.
    expect((await f.claim(0, 10)).leases).toEqual([]);
    expect(await f.acquire(manual)).toMatchObject({ kind: 'ok' });
    await f.release(manual, clock.now() + 1000);
    clock.advance(1000);
    expect((await f.claim(0, 10)).leases.map((l) => l.url)).toEqual(['http://a/2']);
  });

  it('tells a job the host is busy while another live lease holds it', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    const other = { partition: 0, host: 'a', leaseId: 'manual-2', token: 'x', band: 1, entry: { url: 'http://a/z', depth: 0, hops: 0, flags: 0 } };
    const decision = await f.acquire(other);
    expect(decision).toEqual({ kind: 'busy', at: clock.now() + 500 });
    expect(await f.acquire(ticket(lease))).toMatchObject({ kind: 'ok' });
  });

  it('keeps the host for the lease when asked (robots.txt fetched, the page waits for its turn)', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(lease, 'robots'));
    await f.release(ticket(lease, 'robots'), clock.now() + 1000, { keepHost: true });
    clock.advance(1000);
    expect((await f.claim(0, 10)).leases).toEqual([]); // still held: a/2 is not dispatched
    expect(await f.acquire(ticket(lease, 'page'))).toMatchObject({ kind: 'ok' });
  });

  it('stores the host health the politeness model hands back, and returns it at the gate', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2')]);
    const [l1] = (await f.claim(0, 1)).leases as [Lease];
    expect(await f.acquire(ticket(l1))).toMatchObject({ kind: 'ok', health: { streak: 0, backoffMs: 0 } });
    const due = clock.now() + 10;
    await f.release(ticket(l1), due, { health: { streak: 3, backoffMs: 20_000 } });
    clock.advance(10);
    const [l2] = (await f.claim(0, 1)).leases as [Lease];
    // With the host's due time, from which the fetch's lateness is measured.
    expect(await f.acquire(ticket(l2))).toEqual({ kind: 'ok', dueAt: due, health: { streak: 3, backoffMs: 20_000, blocks: 0, level: 0 } });
  });

  it('stores the block state with the health: refusals in a row, and a tier level that never goes down', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2'), item('a', '/3')]);
    const turn = async (health?: { streak: number; backoffMs: number; blocks?: number; level?: number }) => {
      const [lease] = (await f.claim(0, 1)).leases as [Lease];
      const gate = await f.acquire(ticket(lease));
      await f.release(ticket(lease), clock.now(), health === undefined ? {} : { health });
      return gate.kind === 'ok' ? gate.health : null;
    };
    expect(await turn({ streak: 0, backoffMs: 0, blocks: 2, level: 1 })).toEqual({ streak: 0, backoffMs: 0, blocks: 0, level: 0 });
    // A stale worker reporting an older level does not move the host back down.
    expect(await turn({ streak: 0, backoffMs: 0, blocks: 0, level: 0 })).toEqual({ streak: 0, backoffMs: 0, blocks: 2, level: 1 });
    expect(await f.hostState('a')).toMatchObject({ blocks: 0, level: 1, blocked: null });
  });

  it('pauses a blocked host with its reason, lists it, and a resume clears the mark and the run but keeps the tier', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2'), item('b', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    const host = lease.host;
    await f.acquire(ticket(lease));
    await f.release(ticket(lease), clock.now(), { health: { streak: 0, backoffMs: 0, blocks: 3, level: 2 } });
    await f.pauseBlocked(host, 'blocked: 3 refusals in a row, the last: HTTP 403');
    expect(await f.blockedHosts()).toEqual([{ host, reason: 'blocked: 3 refusals in a row, the last: HTTP 403', queued: 1 }]);
    expect(await f.isPaused(host)).toBe(true);
    // Its URL is not handed out; the other host's is.
    expect((await f.claim(0, 10)).leases.map((l) => l.host)).toEqual([host === 'a' ? 'b' : 'a']);
    // An operator's pause of another host is not a block.
    await f.pauseHost('elsewhere');
    expect((await f.blockedHosts()).map((b) => b.host)).toEqual([host]);
    await f.resumeHost(host);
    expect(await f.blockedHosts()).toEqual([]);
    expect(await f.hostState(host)).toMatchObject({ blocks: 0, level: 2, blocked: null });
  });

  it('never moves a due time backwards', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(lease));
    await f.release(ticket(lease), clock.now() + 9000);
    await f.release(ticket(lease), clock.now() + 10);
    expect((await f.hostState('a')).due).toBe(clock.now() + 9000);
  });
});

describe('leases', () => {
  it('returns an expired lease to the front of its queue and makes the old job stale', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('a', '/1'), item('a', '/2')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    expect(await f.acquire(ticket(lease))).toMatchObject({ kind: 'ok' });
    clock.advance(10_001); // the worker died: no release, no ack
    const again = await f.claim(0, 10);
    expect(again.expired).toBe(1);
    expect(again.leases.map((l) => l.url)).toEqual(['http://a/1']);
    expect(again.leases[0]?.id).not.toBe(lease.id);
    // The dead worker's job, redelivered late, must not fetch: the URL went back to the queue.
    expect(await f.acquire(ticket(lease, 'late'))).toEqual({ kind: 'stale' });
    expect(await f.ack(0, [lease.id])).toBe(0);
  });

  it('a redelivered job with a live lease waits for the dead attempt’s token to lapse', async () => {
    const f = makeFrontier({ fetchHoldMs: 3000 });
    await f.push([item('a', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    expect(await f.acquire(ticket(lease, 'dead-worker'))).toMatchObject({ kind: 'ok' });
    const retry = await f.acquire(ticket(lease, 'new-worker'));
    expect(retry).toEqual({ kind: 'busy', at: clock.now() + 3000 });
    clock.advance(3000);
    expect(await f.acquire(ticket(lease, 'new-worker'))).toMatchObject({ kind: 'ok' });
  });

  it('an attempt whose token lapsed mid-fetch and releases late leaves the host to the attempt that took it over', async () => {
    const f = makeFrontier({ fetchHoldMs: 3000 });
    const lease = await takenOverMidFetch(f);
    // The slow attempt's response comes in at last: its release moves the due time, not the claim.
    expect(await f.release(ticket(lease, 'slow'), clock.now() + 1000)).toBe(false);
    clock.advance(1000);
    expect((await f.claim(0, 10)).leases).toEqual([]);
    expect(await f.release(ticket(lease, 'next'), clock.now() + 1000)).toBe(true);
    clock.advance(1000);
    expect((await f.claim(0, 10)).leases.map((l) => l.url)).toEqual(['http://a/2']);
  });

  it('a late release frees the host when no live attempt holds it: a lapsed token, or one borrowed by another host\'s page', async () => {
    const f = makeFrontier({ fetchHoldMs: 3000 });
    const lease = await takenOverMidFetch(f);
    // The attempt that took over died: its token lapses too.
    clock.advance(3000);
    expect(await f.release(ticket(lease, 'slow'), clock.now())).toBe(true);
    expect((await f.claim(0, 10)).leases.map((l) => l.url)).toEqual(['http://a/2']);

    const g = makeFrontier({ fetchHoldMs: 3000, prefix: `${t.prefix}:${run}:borrow` });
    await g.push([item('b', '/1'), item('b', '/2')]);
    const [held] = (await g.claim(0, 1)).leases as [Lease];
    expect(await g.acquire(ticket(held, 'fetch'))).toMatchObject({ kind: 'ok' });
    clock.advance(3000);
    await t.redis.hset(`${t.prefix}:${run}:borrow:{p0}:h:b`, 'tok', 'borrow:x', 'tokUntil', clock.now() + 3000);
    expect(await g.release(ticket(held, 'fetch'), clock.now())).toBe(true);
    expect((await g.claim(0, 10)).leases.map((l) => l.url)).toEqual(['http://b/2']);
  });

  it('an acknowledged lease that still holds its host gives it back to the dispatcher', async () => {
    const f = makeFrontier({ fetchHoldMs: 3000 });
    const lease = await takenOverMidFetch(f);
    expect(await f.release(ticket(lease, 'slow'), clock.now() + 1000, { fetchedAliveUntil: clock.now() + 5000 })).toBe(false);
    // The slow attempt records the page and acknowledges; the attempt that took over dies.
    expect(await f.ack(0, [lease.id])).toBe(1);
    clock.advance(1000);
    const next = (await f.claim(0, 10)).leases;
    expect(next.map((l) => l.url)).toEqual(['http://a/2']);
    // Its token still keeps the host until it lapses.
    expect(await f.acquire(ticket(next[0] as Lease, 'b'))).toMatchObject({ kind: 'busy' });
    clock.advance(2000);
    expect(await f.acquire(ticket(next[0] as Lease, 'b'))).toMatchObject({ kind: 'ok' });
  });

  it('keeps a lease alive through a retry delay, and counts acks once', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('a', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(lease));
    await f.release(ticket(lease), clock.now() + 1000, { leaseUntil: clock.now() + 60_000 });
    clock.advance(30_000);
    expect((await f.claim(0, 10)).expired).toBe(0);
    expect(await f.ack(0, [lease.id, lease.id])).toBe(1);
    const stats = await f.stats();
    expect(stats).toMatchObject({ queued: 0, leased: 0, done: 1 });
  });

  it('adopts a job that has no lease (a dead-letter re-run) and returns it if that worker dies', async () => {
    const f = makeFrontier({ leaseMs: 5000 });
    const manual = { partition: 0, host: 'b', leaseId: 'p0-dlq-7', token: 't', band: 2, entry: { url: 'http://b/x', depth: 2, hops: 0, flags: 0 } };
    expect(await f.acquire(manual)).toMatchObject({ kind: 'ok' });
    expect((await f.stats()).leased).toBe(1);
    clock.advance(5001);
    const claim = await f.claim(0, 10);
    expect(claim.expired).toBe(1);
    expect(claim.leases.map((l) => [l.url, l.depth])).toEqual([['http://b/x', 2]]);
  });
});

describe('concurrency', () => {
  it('many claimers on separate connections never lease one host twice at once', async () => {
    const f = makeFrontier();
    const hosts = Array.from({ length: 50 }, (_, i) => `h${i}`);
    await f.push(hosts.flatMap((h) => [item(h, '/1'), item(h, '/2'), item(h, '/3')]));
    const claimers = Array.from({ length: 6 }, (_, i) => {
      const conn = testConnection();
      return { conn, frontier: new Frontier(conn, { ...f.options }), i };
    });
    const holding = new Set<string>();
    const fetched: string[] = [];
    let violations = 0;
    await Promise.all(
      claimers.map(async ({ frontier }) => {
        for (let round = 0; round < 60 && fetched.length < 150; round += 1) {
          const { leases } = await frontier.claim(0, 5);
          for (const lease of leases) {
            if (holding.has(lease.host)) violations += 1;
            holding.add(lease.host);
            expect((await frontier.acquire(ticket(lease, `${lease.id}`))).kind).toBe('ok');
            fetched.push(lease.url);
            holding.delete(lease.host);
            await frontier.release(ticket(lease, `${lease.id}`), clock.now());
            await frontier.ack(0, [lease.id]);
          }
        }
      }),
    );
    for (const c of claimers) c.conn.disconnect();
    expect(violations).toBe(0);
    expect(new Set(fetched).size).toBe(150);
    expect(fetched.length).toBe(150);
    expect(await f.stats()).toMatchObject({ queued: 0, leased: 0, done: 150 });
  });
});

/**
 * The crash windows of the lease protocol, each reproduced against the real scripts: what a job
 * that outlived its attempt (a killed worker, a lost acknowledgement, a late dispatcher) finds at
 * the gate, and what comes back to the queue.
 */
describe('crash windows', () => {
  const claimOne = async (f: Frontier): Promise<Lease> => (await f.claim(0, 1)).leases[0] as Lease;

  it('a job redelivered after its lease was acknowledged is stale (killed between the ack and the job\'s completion)', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1')]);
    const lease = await claimOne(f);
    expect(await f.acquire(ticket(lease, 'first'))).toMatchObject({ kind: 'ok' });
    await f.release(ticket(lease, 'first'), clock.now() + 100);
    expect(await f.ack(0, [lease.id])).toBe(1);
    // BullMQ's stalled check hands the still-active job to another worker: it must not fetch again.
    clock.advance(1000);
    expect(await f.acquire(ticket(lease, 'redelivered'))).toEqual({ kind: 'stale' });
    expect(await f.stats()).toMatchObject({ queued: 0, leased: 0, done: 1 });
  });

  it('an adopted lease (a dead-letter re-run) acknowledged and redelivered is stale too, while a fresh re-run is adopted', async () => {
    const f = makeFrontier();
    const rerun = { partition: 0, host: 'b', leaseId: 'r-1b2c', token: 't1', band: 2, entry: { url: 'http://b/x', depth: 1, hops: 0, flags: 0 } };
    expect(await f.acquire(rerun)).toMatchObject({ kind: 'ok' });
    await f.release(rerun, clock.now());
    expect(await f.ack(0, [rerun.leaseId])).toBe(1);
    expect(await f.acquire({ ...rerun, token: 't2' })).toEqual({ kind: 'stale' });
    expect(await f.acquire({ ...rerun, leaseId: 'r-9e8f', token: 't3' })).toMatchObject({ kind: 'ok' });
  });

  it('lease ids never repeat across a wiped frontier, so a job of the old generation cannot ack a new lease', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1')]);
    const before = await claimOne(f);
    await deleteByPrefix(t.redis, `${f.options.prefix}:`); // Redis lost the frontier
    clock.advance(5);
    await f.push([item('a', '/1')]);
    const after = await claimOne(f);
    expect(after.id).not.toBe(before.id);
    // The old job's late ack does not touch the new lease.
    expect(await f.ack(0, [before.id])).toBe(0);
    expect((await f.stats()).leased).toBe(1);
  });

  it('nothing is claimed from a partition whose data was lost, even URLs pushed after the loss, until it is marked live again', async () => {
    const f = makeFrontier({ requireLiveMark: true });
    await f.push([item('a', '/1')]);
    expect((await f.claim(0, 10)).leases).toEqual([]); // never marked
    await f.markLive();
    const [lease] = (await f.claim(0, 10)).leases as [Lease];
    await f.acquire(ticket(lease));
    await deleteByPrefix(t.redis, `${f.options.prefix}:`); // Redis lost everything
    // A job in flight discovers b's URLs and pushes them into the empty frontier: b's due time
    // (and a's) went with Redis, so none may be handed out before the rebuild.
    await f.push([item('b', '/1'), item('a', '/2')]);
    expect((await f.claim(0, 10)).leases).toEqual([]);
    await f.markLive(); // the rebuild's last frontier step
    // Pushed into a frontier that had lost its data, they come out flagged Verify: the rebuild
    // may have restored the same URLs from PostgreSQL, and only the first copy is fetched.
    const after = (await f.claim(0, 10)).leases;
    expect(after.map((l) => [l.url, (l.flags & UrlFlag.Verify) !== 0]).sort()).toEqual([
      ['http://a/2', true],
      ['http://b/1', true],
    ]);
    // Pushed while the partition is live: no flag.
    await f.push([item('c', '/1')]);
    expect((await f.claim(0, 10)).leases.map((l) => [l.url, l.flags & UrlFlag.Verify])).toEqual([['http://c/1', 0]]);
  });

  it('a push into a partition whose data was lost never spills: the rebuild counts every spilled row it finds', async () => {
    const f = makeFrontier({ requireLiveMark: true, redisMaxUrls: 1, hostHeadUrls: 1 });
    await f.markLive();
    await f.push([item('a', '/1')], { spill: true });
    // Live and at its cap: a's next URL waits in PostgreSQL.
    expect((await f.push([item('a', '/2')], { spill: true })).spills.map((s) => s.index)).toEqual([0]);
    await deleteByPrefix(t.redis, `${f.options.prefix}:`); // Redis lost everything
    // Past the cap again, but the partition is not live: every URL goes to Redis (flagged Verify), none spills.
    const pushed = await f.push([item('a', '/3'), item('a', '/4'), item('b', '/1')], { spill: true });
    expect(pushed).toMatchObject({ pushed: 3, spills: [] });
    expect(await f.stats()).toMatchObject({ queued: 3, spilled: 0 });
  });

  it('a job of a wiped frontier reaching the gate is stale, not adopted onto a host whose due time and token are gone', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1')]);
    const lease = await claimOne(f);
    await deleteByPrefix(t.redis, `${f.options.prefix}:`); // Redis lost everything, the job is in a worker
    expect(await f.acquire(ticket(lease, 'in-memory'))).toEqual({ kind: 'stale' });
    expect((await f.stats()).leased).toBe(0);
    // A dead-letter re-run (an id the dispatcher never issued) is still adopted.
    expect(await f.acquire({ ...ticket(lease, 'rerun'), leaseId: 'r-77' })).toMatchObject({ kind: 'ok' });
  });

  it('a URL whose lease expired comes back flagged Verify (it may have been recorded before its worker died)', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('a', '/1')]);
    const lease = await claimOne(f);
    expect(lease.flags & UrlFlag.Verify).toBe(0);
    clock.advance(10_001);
    const again = await claimOne(f);
    expect(again.url).toBe('http://a/1');
    expect(again.flags & UrlFlag.Verify).toBe(UrlFlag.Verify);
  });

  it('a slow job keeps its lease by renewing it; without renewal the URL is handed out twice', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('a', '/1'), item('b', '/1')]);
    const [slow, renewed] = (await f.claim(0, 2)).leases as [Lease, Lease];
    for (const l of [slow, renewed]) {
      expect(await f.acquire(ticket(l, l.id))).toMatchObject({ kind: 'ok' });
      await f.release(ticket(l, l.id), clock.now(), { leaseUntil: clock.now() + 10_000 });
    }
    // Post-fetch work (storing, PostgreSQL) takes 25 s; one job renews every third of the lease.
    for (let s = 0; s < 25; s += 1) {
      clock.advance(1000);
      if (s % 3 === 2) expect(await f.extendLease(0, renewed.id, clock.now() + 10_000)).toBe(true);
    }
    const claim = await f.claim(0, 10);
    expect(claim.expired).toBe(1);
    expect(claim.leases.map((l) => l.url)).toEqual(['http://a/1']); // the unrenewed one goes out again
    expect(await f.extendLease(0, slow.id, clock.now() + 10_000)).toBe(false); // and is not revived
  });

  it('extending a lease or releasing with a lease time never shortens it', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('a', '/1'), item('a', '/2')]);
    const lease = await claimOne(f);
    await f.acquire(ticket(lease));
    expect(await f.extendLease(0, lease.id, clock.now() + 60_000)).toBe(true);
    expect(await f.extendLease(0, lease.id, clock.now() + 1000)).toBe(true);
    await f.release(ticket(lease), clock.now(), { leaseUntil: clock.now() + 2000 });
    clock.advance(30_000);
    expect((await f.claim(0, 10)).expired).toBe(0);
  });

  it('a retry that waits longer than its lease: the URL comes back once, the retry job is stale', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('a', '/1')]);
    const lease = await claimOne(f);
    await f.acquire(ticket(lease, 'try-1'));
    await f.release(ticket(lease, 'try-1'), clock.now() + 100, { leaseUntil: clock.now() + 5000 + 10_000 });
    clock.advance(60_000); // every worker was down: the retry comes back late
    const claim = await f.claim(0, 10);
    expect(claim.expired).toBe(1);
    expect(claim.leases.map((l) => l.url)).toEqual(['http://a/1']);
    expect(await f.acquire(ticket(lease, 'try-2'))).toEqual({ kind: 'stale' });
  });

  it('a dispatcher that died between claiming and adding the jobs: its leases can be given back at once', async () => {
    const f = makeFrontier({ leaseMs: 60_000 });
    await f.push([item('a', '/1'), item('b', '/1')]);
    const orphans = (await f.claim(0, 10)).leases;
    clock.advance(2000);
    expect(await f.leasesExpiringBy(0, clock.now() + 60_000 - 1000)).toEqual(orphans.map((l) => l.id));
    expect(await f.leasesExpiringBy(0, clock.now() + 60_000 - 3000)).toEqual([]);
    expect(await f.requeue(0, [...orphans.map((l) => l.id), 'p0-0'])).toBe(2);
    const again = (await f.claim(0, 10)).leases;
    expect(again.map((l) => l.url).sort()).toEqual(['http://a/1', 'http://b/1']);
    expect(again.every((l) => (l.flags & UrlFlag.Verify) !== 0)).toBe(true);
    // The old dispatcher was only slow and adds a job after all: the gate drops it.
    expect(await f.acquire(ticket(orphans[0] as Lease, 'late'))).toEqual({ kind: 'stale' });
  });

  it('a lease whose URL was fetched is never given back as an orphan: its page is on its way to the record', async () => {
    const f = makeFrontier({ leaseMs: 60_000 });
    await f.push([item('a', '/1'), item('b', '/1'), item('c', '/1')]);
    const leases = (await f.claim(0, 10)).leases;
    const [handed, fetched, never] = ['a', 'b', 'c'].map((h) => leases.find((l) => l.host === h)) as [Lease, Lease, Lease];
    // a: fetched and handed to the process stage (its fetch job is finished, and may be gone from
    // the queue's history); b: fetched, its job still recording it; c: never brought to the gate.
    for (const [lease, token] of [[handed, 'ta'], [fetched, 'tb']] as const) {
      await f.acquire(ticket(lease, token));
      await f.release(ticket(lease, token), clock.now() + 500, { fetchedAliveUntil: clock.now() + 3000 });
    }
    expect(await f.handOff(0, handed.id, 'ta', 'page a')).not.toBeNull();
    clock.advance(2000);
    expect(await f.requeue(0, [handed.id, fetched.id, never.id])).toBe(1);
    expect((await f.stats()).leased).toBe(2);
    clock.advance(1000);
    expect((await f.claim(0, 10)).leases.map((l) => l.url)).toEqual(['http://c/1']);
    // The handed page is acknowledged with its lease as usual.
    expect(await f.ack(0, [handed.id])).toBe(1);
  });
});

describe('idle hosts', () => {
  it('expire once nothing is queued and no lease holds them, and never while URLs wait', async () => {
    const f = makeFrontier({ idleHostTtlMs: 300 });
    await f.push([{ ...item('a', '/x?d=1'), variantKey: 'a/x' }, item('a', '/2'), item('b', '/1')], { maxQueryVariants: 10 });
    const keys = f.keysOf(0);
    const [la, lb] = (await f.claim(0, 10)).leases as [Lease, Lease];
    for (const l of [la, lb]) {
      await f.acquire(ticket(l));
      await f.release(ticket(l), clock.now());
      await f.ack(0, [l.id]);
    }
    // b is idle; a still has /2 queued.
    expect(await t.redis.pttl(`${keys.base}h:b`)).toBeGreaterThan(0);
    expect(await t.redis.pttl(`${keys.base}h:a`)).toBe(-1);
    await new Promise((r) => setTimeout(r, 400));
    expect(await t.redis.exists(`${keys.base}h:b`)).toBe(0);
    expect(await t.redis.exists(`${keys.base}h:a`)).toBe(1);

    const [a2] = (await f.claim(0, 10)).leases as [Lease];
    await f.acquire(ticket(a2));
    await f.release(ticket(a2), clock.now());
    expect(await t.redis.pttl(`${keys.base}h:a`)).toBeGreaterThan(0);
    expect(await t.redis.pttl(`${keys.base}v:a`)).toBeGreaterThan(0);
    // New URLs for an idle host make it permanent again.
    await f.push([item('a', '/3')]);
    expect(await t.redis.pttl(`${keys.base}h:a`)).toBe(-1);
    await new Promise((r) => setTimeout(r, 400));
    expect((await f.claim(0, 10)).leases.map((l) => l.url)).toEqual(['http://a/3']);
  });

  it('never expire while URLs of theirs wait in PostgreSQL (spilled), and ask for a refill instead', async () => {
    const f = makeFrontier({ idleHostTtlMs: 300, redisMaxUrls: 1, hostHeadUrls: 1 });
    const keys = f.keysOf(0);
    const pushed = await f.push([item('a', '/1'), item('a', '/2'), item('a', '/3')], { spill: true });
    expect(pushed).toMatchObject({ pushed: 1, spills: [{ index: 1 }, { index: 2 }] });
    expect(await f.hostState('a')).toMatchObject({ queued: 1, spilled: 2 });
    const [lease] = (await f.claim(0, 10)).leases as [Lease];
    await f.acquire(ticket(lease));
    await f.release(ticket(lease), clock.now());
    await f.ack(0, [lease.id]);
    // Nothing queued in Redis, no lease: idle but for its spilled URLs.
    expect(await t.redis.pttl(`${keys.base}h:a`)).toBe(-1);
    expect(await t.redis.smembers(keys.refill)).toEqual(['a']);
    // Without the opt-in (a caller that cannot record spills) nothing spills.
    expect(await f.push([item('b', '/1'), item('b', '/2')])).toMatchObject({ pushed: 2, spills: [] });
  });

  it('a host whose hash expired starts afresh: due now, no back-off', async () => {
    const f = makeFrontier({ idleHostTtlMs: 200 });
    await f.push([item('c', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(lease));
    await f.release(ticket(lease), clock.now() + 100, { health: { streak: 2, backoffMs: 50 } });
    await new Promise((r) => setTimeout(r, 300));
    expect(await f.hostState('c')).toMatchObject({ due: 0, streak: 0, backoffMs: 0, queued: 0, total: 0 });
  });
});

describe('restore (trawl frontier rebuild)', () => {
  const restoreItem = (host: string, path: string, hashByte: number, queue = true) => ({
    ...item(host, path),
    hash: Buffer.alloc(16, hashByte),
    queue,
  });

  it('queues each URL once per rebuild however often it runs, counts settled ones in the host budget, and flags Verify', async () => {
    const f = makeFrontier({ maxUrlsPerHost: 3 });
    const items = [restoreItem('a', '/1', 1), restoreItem('a', '/done', 2, false), restoreItem('b', '/1', 3)];
    expect(await f.restore('g1', items.slice(0, 2))).toEqual({ queued: 1, counted: 1, skipped: 0 });
    // Interrupted and run again from the start: nothing is queued twice.
    expect(await f.restore('g1', items)).toEqual({ queued: 1, counted: 0, skipped: 2 });
    expect((await f.stats()).queued).toBe(2);
    expect(await f.hostState('a')).toMatchObject({ queued: 1, total: 2 });
    // The budget counts the restored URLs: a has room for one more.
    expect(await f.push([item('a', '/new1'), item('a', '/new2')])).toMatchObject({ pushed: 1, refused: 1 });
    const claimed = (await f.claim(0, 10)).leases;
    expect(claimed.map((l) => l.url).sort()).toEqual(['http://a/1', 'http://b/1']);
    expect(claimed.every((l) => (l.flags & UrlFlag.Verify) !== 0)).toBe(true);
    // Another rebuild generation starts over.
    expect(await f.restore('g2', [restoreItem('c', '/1', 1)])).toMatchObject({ queued: 1 });
  });
});

describe('an attempt whose job was handed over while it still works', () => {
  it('keeps the URL from being fetched again while it is alive, until the lease is acknowledged (BullMQ lock lapsed during a Redis restart)', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('a', '/1'), item('a', '/2')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    expect(await f.acquire(ticket(lease, 'first'))).toMatchObject({ kind: 'ok' });
    // The page is fetched; the host is free for its next URL; the attempt stores and records.
    await f.release(ticket(lease, 'first'), clock.now() + 100, { leaseUntil: clock.now() + 10_000, fetchedAliveUntil: clock.now() + 3000 });
    clock.advance(200);
    // Its job's lock lapsed: BullMQ hands it to another worker, which must not fetch it again.
    expect(await f.acquire(ticket(lease, 'second'))).toEqual({ kind: 'busy', at: clock.now() - 200 + 3000 + 500 });
    // Meanwhile the host serves its next URL as usual.
    expect((await f.claim(0, 10)).leases.map((l) => l.url)).toEqual(['http://a/2']);
    // The first attempt is alive and renews: still busy after its first alive time.
    clock.advance(2000);
    expect(await f.extendLease(0, lease.id, clock.now() + 10_000, { token: 'first', aliveUntil: clock.now() + 3000 })).toBe(true);
    clock.advance(2000);
    expect(await f.acquire(ticket(lease, 'second'))).toMatchObject({ kind: 'busy' });
    // It records and acks: the handed-over job is stale when it comes back.
    await f.ack(0, [lease.id]);
    expect(await f.acquire(ticket(lease, 'second'))).toEqual({ kind: 'stale' });
  });

  it('if the fetching attempt dies, its mark lapses with its renewals: the job fetches again (it died between fetch and record)', async () => {
    const f = makeFrontier({ leaseMs: 60_000 });
    await f.push([item('b', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(lease, 'first'));
    await f.release(ticket(lease, 'first'), clock.now(), { leaseUntil: clock.now() + 60_000, fetchedAliveUntil: clock.now() + 3000 });
    clock.advance(1000);
    expect(await f.acquire(ticket(lease, 'second'))).toMatchObject({ kind: 'busy' });
    clock.advance(2500); // no renewal came: the first attempt is dead
    expect(await f.acquire(ticket(lease, 'second'))).toMatchObject({ kind: 'ok' });
    // A heartbeat from another token cannot revive the dead one's mark.
    expect(await f.extendLease(0, lease.id, clock.now() + 60_000, { token: 'someone', aliveUntil: clock.now() + 9000 })).toBe(true);
    expect(await t.redis.hget(f.keysOf(0).fetched, lease.id)).toMatch(/^first /);
  });

  it('a lease that expires takes its mark, and its URL mark, with it', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('c', '/1')]);
    const [lease] = (await f.claim(0, 1)).leases as [Lease];
    await f.acquire(ticket(lease, 'first'));
    await f.release(ticket(lease, 'first'), clock.now(), { leaseUntil: clock.now() + 10_000, fetchedAliveUntil: clock.now() + 60_000 });
    expect(await t.redis.hget(f.keysOf(0).fetched, 'u:http://c/1')).toBe(lease.id);
    clock.advance(10_001);
    const again = (await f.claim(0, 10)).leases;
    expect(again.map((l) => [l.url, (l.flags & UrlFlag.Verify) !== 0])).toEqual([['http://c/1', true]]);
    expect(await f.acquire(ticket(lease, 'second'))).toEqual({ kind: 'stale' });
    expect(await t.redis.hexists(f.keysOf(0).fetched, lease.id)).toBe(0);
    expect(await t.redis.hkeys(f.keysOf(0).fetched)).toEqual([]);
    expect(await f.acquire(ticket(again[0] as Lease, 'third'))).toMatchObject({ kind: 'ok' });
  });
});

describe('two copies of one URL under two leases (a rebuild restored it beside a copy pushed after the loss)', () => {
  it('the second waits at the gate while the first is being recorded, and passes once it is acknowledged', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([item('a', '/1'), { ...item('a', '/1'), flags: UrlFlag.Verify }, item('a', '/2')]);
    const [first] = (await f.claim(0, 1)).leases as [Lease];
    expect(await f.acquire(ticket(first, 'first'))).toMatchObject({ kind: 'ok' });
    await f.release(ticket(first, 'first'), clock.now() + 100, { leaseUntil: clock.now() + 10_000, fetchedAliveUntil: clock.now() + 3000 });
    clock.advance(200);
    const [second] = (await f.claim(0, 1)).leases as [Lease];
    expect([second.url, second.id === first.id]).toEqual(['http://a/1', false]);
    expect(await f.acquire(ticket(second, 'second'))).toEqual({ kind: 'busy', at: clock.now() - 200 + 3000 + 500 });
    // The first attempt renews while it stores and records: still busy after its first alive time.
    clock.advance(2000);
    await f.extendLease(0, first.id, clock.now() + 10_000, { token: 'first', aliveUntil: clock.now() + 3000 });
    clock.advance(2000);
    expect(await f.acquire(ticket(second, 'second'))).toMatchObject({ kind: 'busy' });
    // Recorded and acknowledged: the copy passes (its job then finds the URL recorded), and the mark is gone.
    await f.ack(0, [first.id]);
    expect(await t.redis.hkeys(f.keysOf(0).fetched)).toEqual([]);
    expect(await f.acquire(ticket(second, 'second'))).toMatchObject({ kind: 'ok' });
  });

  it('a first copy whose attempt died (no renewals) lets the second through, and only the same URL is held back', async () => {
    const f = makeFrontier({ leaseMs: 60_000 });
    await f.push([item('b', '/1'), item('c', '/1'), item('b', '/1'), { ...item('b', '/1'), url: 'https://b/1' }]);
    const { leases } = await f.claim(0, 2);
    const first = leases.find((l) => l.host === 'b') as Lease;
    const other = leases.find((l) => l.host === 'c') as Lease;
    await f.acquire(ticket(first, 'first'));
    await f.release(ticket(first, 'first'), clock.now(), { leaseUntil: clock.now() + 60_000, fetchedAliveUntil: clock.now() + 3000 });
    // Another host's URL of the same path is not held back.
    expect(await f.acquire(ticket(other, 'other'))).toMatchObject({ kind: 'ok' });
    const second = (await f.claim(0, 1)).leases[0] as Lease;
    expect(second.url).toBe('http://b/1');
    expect(await f.acquire(ticket(second, 'second'))).toMatchObject({ kind: 'busy' });
    clock.advance(3500); // no renewal came: the first attempt is dead
    expect(await f.acquire(ticket(second, 'second'))).toMatchObject({ kind: 'ok' });
    expect(await t.redis.hexists(f.keysOf(0).fetched, 'u:http://b/1')).toBe(0);
    // The https URL of the same path is another URL.
    await f.release(ticket(second, 'second'), clock.now(), { leaseUntil: clock.now() + 60_000, fetchedAliveUntil: clock.now() + 3000 });
    const https = (await f.claim(0, 1)).leases[0] as Lease;
    expect(https.url).toBe('https://b/1');
    expect(await f.acquire(ticket(https, 'https'))).toMatchObject({ kind: 'ok' });
  });
});

describe('two copies of one URL, the copy flagged Verify first (a process stage redid a page while its first try still pushed the links)', () => {
  it('the copy without the flag, passing the gate once the Verify copy is acknowledged, is told to ask PostgreSQL', async () => {
    const f = makeFrontier({ leaseMs: 10_000 });
    await f.push([{ ...item('v', '/1'), flags: UrlFlag.Verify }, item('v', '/1'), item('w', '/1')]);
    const [first] = (await f.claim(0, 1)).leases.filter((l) => l.host === 'v') as [Lease];
    expect(first.flags & UrlFlag.Verify).toBe(UrlFlag.Verify);
    const gate = await f.acquire(ticket(first, 'first'));
    expect(gate).toMatchObject({ kind: 'ok' });
    expect(gate).not.toHaveProperty('verify');
    await f.release(ticket(first, 'first'), clock.now() + 100, { leaseUntil: clock.now() + 10_000, fetchedAliveUntil: clock.now() + 3000 });
    await f.ack(0, [first.id]);
    clock.advance(200);
    const leases = (await f.claim(0, 5)).leases;
    const second = leases.find((l) => l.host === 'v') as Lease;
    const other = leases.find((l) => l.host === 'w') as Lease;
    expect([second.url, second.flags & UrlFlag.Verify]).toEqual(['http://v/1', 0]);
    expect(await f.acquire(ticket(second, 'second'))).toMatchObject({ kind: 'ok', verify: true });
    // Only that URL: another host's lease of the same path is not told to.
    expect(await f.acquire(ticket(other, 'other'))).not.toHaveProperty('verify');
  });

  it('an acknowledged lease without the flag leaves no mark, and marks older than ten minutes go with the next Verify ack', async () => {
    const f = makeFrontier({ leaseMs: 3_600_000 });
    const keys = f.keysOf(0);
    await f.push([item('x', '/1'), { ...item('y', '/1'), flags: UrlFlag.Verify }]);
    const { leases } = await f.claim(0, 2);
    const plain = leases.find((l) => l.host === 'x') as Lease;
    const verify = leases.find((l) => l.host === 'y') as Lease;
    await f.ack(0, [plain.id]);
    expect(await t.redis.zrangebyscore(`${keys.base}verified`, '-inf', '+inf')).toEqual([]);
    await f.ack(0, [verify.id]);
    expect(await t.redis.zrangebyscore(`${keys.base}verified`, '-inf', '+inf')).toEqual(['u:http://y/1']);
    clock.advance(600_001);
    await f.push([{ ...item('z', '/1'), flags: UrlFlag.Verify }]);
    const [late] = (await f.claim(0, 1)).leases as [Lease];
    await f.ack(0, [late.id]);
    expect(await t.redis.zrangebyscore(`${keys.base}verified`, '-inf', '+inf')).toEqual(['u:http://z/1']);
  });
});

describe('a push the client sends twice', () => {
  it('(its reply lost when the connection dropped, ioredis resends it on reconnect) queues each URL once', async () => {
    const f = makeFrontier({ maxUrlsPerHost: 2 });
    const keys = f.keysOf(0);
    // The script exactly as the frontier runs it, called twice with the same arguments.
    const { lua } = loadScript(fileURLToPath(new URL('../lua', import.meta.url)), 'pushUrls-4');
    const args = [keys.base, clock.now(), 2, 'call-1', 0, 0, 0, 'a', 2, '0 0 0 /1', '', 0, 'a', 2, '0 0 0 /2', '', 0, 'a', 2, '0 0 0 /3', '', 0];
    const script = lua;
    const first = await t.redis.eval(script, 4, keys.ready, keys.stats, keys.live, keys.refill, ...args);
    const again = await t.redis.eval(script, 4, keys.ready, keys.stats, keys.live, keys.refill, ...args);
    expect(first).toEqual([2, 1, 0, '..b']);
    expect(again).toEqual(first);
    expect(await f.stats()).toMatchObject({ queued: 2 });
    expect(await f.hostState('a')).toMatchObject({ queued: 2, total: 2 });
  });
});
