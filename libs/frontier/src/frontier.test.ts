import { ManualClock } from '@trawl/core';
import { testConnection, testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { decodeEntry, encodeEntry } from './entry.js';
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

  it('keeps depth, hops and flags through the queue', async () => {
    const f = makeFrontier();
    await f.push([{ host: 'h', url: 'http://h/x', depth: 7, hops: 2, flags: 4, priority: 1 }]);
    const [lease] = (await f.claim(0, 1)).leases;
    expect(lease).toMatchObject({ url: 'http://h/x', depth: 7, hops: 2, flags: 4, band: 3, host: 'h' });
  });

  it('refuses URLs over the per-host budget', async () => {
    const f = makeFrontier({ maxUrlsPerHost: 2 });
    expect(await f.push([item('a', '/1'), item('a', '/2'), item('a', '/3'), item('b', '/1')])).toEqual({ pushed: 3, refused: 1, refusedVariants: 0 });
    expect((await f.stats()).queued).toBe(3);
  });

  it('caps the query variants of one path (calendars, faceted search)', async () => {
    const f = makeFrontier();
    const v = (path: string, key: string | null) => ({ ...item('a', path), variantKey: key });
    const result = await f.push(
      [v('/cal?d=1', 'a/cal'), v('/cal?d=2', 'a/cal'), v('/cal?d=3', 'a/cal'), v('/s?q=1', 'a/s'), v('/plain', null)],
      { maxQueryVariants: 2 },
    );
    expect(result).toEqual({ pushed: 4, refused: 0, refusedVariants: 1 });
    expect(await f.push([v('/cal?d=4', 'a/cal')], { maxQueryVariants: 2 })).toMatchObject({ pushed: 0, refusedVariants: 1 });
    expect(await f.push([v('/cal?d=4', 'a/cal')], { maxQueryVariants: 0 })).toMatchObject({ pushed: 1 });
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
    expect(await f.acquire(ticket(l1))).toEqual({ kind: 'ok', health: { streak: 0, backoffMs: 0 } });
    await f.release(ticket(l1), clock.now() + 10, { health: { streak: 3, backoffMs: 20_000 } });
    clock.advance(10);
    const [l2] = (await f.claim(0, 1)).leases as [Lease];
    expect(await f.acquire(ticket(l2))).toEqual({ kind: 'ok', health: { streak: 3, backoffMs: 20_000 } });
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
