import { ManualClock } from '@trawl/core';
import { isCluster } from '@trawl/redis';
import { testConnection, testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { UrlFlag } from './entry.js';
import { Frontier, type Lease, type PushItem } from './frontier.js';
import { ProcessStream } from './process-stream.js';

/**
 * The hand-off from the fetch stage to the process stage, against the real scripts: a page
 * fetched and stored becomes a process stream entry in the same step as its lease stops
 * expiring, and is acknowledged with the lease once recorded. Nothing in between may send the
 * URL back to be fetched again, lose it, or let a second copy of it through the gate.
 */
const t: TestRedis = testRedis('handoff');
afterAll(() => t.cleanup());
let clock: ManualClock;
let run = 0;
beforeEach(() => {
  run += 1;
  clock = new ManualClock(1_000_000);
});

const makeFrontier = () =>
  new Frontier(t.redis, { prefix: `${t.prefix}:${run}`, partitions: 2, bands: 4, leaseMs: 10_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, clock });
const item = (host: string, path: string, flags = 0): PushItem => ({ host, url: `http://${host}${path}`, depth: 1, hops: 0, flags, priority: 0.5 });
const ticket = (lease: Lease, token: string) => ({ partition: lease.partition, host: lease.host, leaseId: lease.id, token, band: lease.band, entry: lease });

/** Claims the URL, passes the gate and releases the host as a fetch does, marked fetched by `token`. */
async function fetchOne(f: Frontier, partition: number, token: string): Promise<Lease> {
  const [lease] = (await f.claim(partition, 1)).leases as [Lease];
  expect(await f.acquire(ticket(lease, token))).toMatchObject({ kind: 'ok' });
  await f.release(ticket(lease, token), clock.now() + 100, { leaseUntil: clock.now() + 10_000, fetchedAliveUntil: clock.now() + 3000 });
  return lease;
}

describe('handOff', () => {
  it('adds one stream entry, and the lease then never expires: a long backlog or a dead fetcher never refetches', async () => {
    const f = makeFrontier();
    const host = 'a.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1'), item(host, '/2')]);
    const lease = await fetchOne(f, p, 'tok');
    const entry = await f.handOff(p, lease.id, 'tok', '{"page":1}');
    expect(entry).toMatch(/^\d+-\d+$/);
    clock.advance(24 * 3600_000); // a day in the backlog
    const later = await f.claim(p, 10);
    expect(later.expired).toBe(0);
    expect(later.leases.map((l) => l.url)).toEqual(['http://a.example/2']);
    // The fetch job of the handed lease, redelivered after its worker died, is stale at the gate.
    expect(await f.acquire(ticket(lease, 'redelivered'))).toEqual({ kind: 'stale' });
    expect((await f.stats()).leased).toBe(2);
  });

  it('hands off only a lease that is still this attempt’s: an expired one, or one another attempt fetched, adds nothing', async () => {
    const f = makeFrontier();
    const host = 'b.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1')]);
    const lease = await fetchOne(f, p, 'first');
    expect(await f.handOff(p, lease.id, 'second', 'x')).toBeNull();
    clock.advance(10_001);
    await f.claim(p, 10); // expires it
    expect(await f.handOff(p, lease.id, 'first', 'x')).toBeNull();
    expect(await t.redis.xlen(f.keysOf(p).process)).toBe(0);
  });

  it('a render stage carrying on for the lease hands off whoever marked it fetched, but never twice, nor an expired lease', async () => {
    const f = makeFrontier();
    const host = 'r.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1'), item(host, '/2')]);
    // Marked by the fetch attempt, then by a render delivery that released the host and failed.
    const lease = await fetchOne(f, p, 'fetch-tok');
    await t.redis.hset(f.keysOf(p).fetched, lease.id, `render-1 ${clock.now() + 3000}`);
    expect(await f.handOff(p, lease.id, 'render-2', 'x', host)).toBeNull();
    expect(await f.handOff(p, lease.id, 'render-2', 'x', host, true)).toMatch(/^(u:)?\d+-\d+$/);
    expect(await f.handOff(p, lease.id, 'render-3', 'x', host, true)).toBeNull();
    const keys = f.keysOf(p);
    expect((await t.redis.xlen(keys.process)) + (await t.redis.xlen(keys.urgent))).toBe(1);
    // A lease that expired is nobody's to hand off.
    clock.advance(200);
    const second = await fetchOne(f, p, 'fetch-2');
    clock.advance(10_001);
    await f.claim(p, 10);
    expect(await f.handOff(p, second.id, 'render-4', 'x', host, true)).toBeNull();
  });

  it('the ack acknowledges and deletes the entry with its lease, and frees the URL mark for a second copy', async () => {
    const f = makeFrontier();
    const host = 'c.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1'), item(host, '/1', UrlFlag.Verify)]);
    const first = await fetchOne(f, p, 'first');
    const entry = (await f.handOff(p, first.id, 'first', 'payload')) as string;
    clock.advance(200);
    const [second] = (await f.claim(p, 1)).leases as [Lease];
    // The copy waits while the first is in the backlog, asking again now and then.
    expect(await f.acquire(ticket(second, 'second'))).toEqual({ kind: 'busy', at: clock.now() + 5000 });
    const stream = new ProcessStream(t.redis, `${t.prefix}:${run}`, 2, 'c1');
    const [read] = await stream.read([p], 10, 10);
    expect(read).toEqual({ partition: p, id: entry, urgent: false, payload: 'payload', deliveries: 1 });
    expect(await f.ack(p, [first.id], [entry])).toBe(1);
    expect(await t.redis.xlen(f.keysOf(p).process)).toBe(0);
    expect(await t.redis.xpending(f.keysOf(p).process, 'process')).toEqual([0, null, null, null]);
    expect(await f.acquire(ticket(second, 'second'))).toMatchObject({ kind: 'ok' });
  });
});

describe('ProcessStream', () => {
  it('reads every partition in one call, gives each entry to one consumer, and reports the backlog', async () => {
    const f = makeFrontier();
    const hosts = ['d1.example', 'd2.example', 'd3.example', 'd4.example', 'd5.example', 'd6.example'];
    for (const host of hosts) await f.push([item(host, '/1')]);
    const handed: string[] = [];
    for (const p of [0, 1]) {
      for (const lease of (await f.claim(p, 10)).leases) {
        await f.acquire(ticket(lease, 'tok'));
        await f.release(ticket(lease, 'tok'), clock.now(), { fetchedAliveUntil: clock.now() + 3000 });
        handed.push((await f.handOff(p, lease.id, 'tok', lease.url)) as string);
      }
    }
    const prefix = `${t.prefix}:${run}`;
    const stats = await f.stats();
    expect(stats.processBacklog).toBe(6);
    expect(stats.processOldestAt).toBeGreaterThan(Date.now() - 60_000);
    expect(stats.partitions.every((p) => (p.processBacklog === 0) === (p.processOldestAt === null))).toBe(true);
    const [ca, cb] = [testConnection(), testConnection()];
    const a = new ProcessStream(ca, prefix, 2, 'a');
    const b = new ProcessStream(cb, prefix, 2, 'b');
    const [first, second] = await Promise.all([a.read([0, 1], 4, 50), b.read([0, 1], 4, 50)]);
    // On one Redis a single call reads every stream (two per partition), each asked for its
    // share of the count: one reader never takes the whole backlog while another has room (a
    // cluster's reads go a partition at a time). Then the two take what is left.
    if (!isCluster(t.redis)) expect(new Set(first.map((e) => e.partition))).toEqual(new Set([0, 1]));
    expect(first.length).toBeLessThanOrEqual(4);
    expect(second.length).toBeLessThanOrEqual(4);
    const rest = [...(await a.read([0, 1], 10, 10)), ...(await b.read([0, 1], 10, 10))];
    ca.disconnect();
    cb.disconnect();
    const read = [...first, ...second, ...rest];
    expect(read.map((e) => e.id).sort()).toEqual([...handed].sort());
    expect(read.map((e) => e.payload).sort()).toEqual(hosts.map((h) => `http://${h}/1`).sort());
  });

  it('a page whose host has nothing else queued goes to the urgent stream: read first, counted, touched, claimed and acknowledged as "u:<id>"', async () => {
    const f = makeFrontier();
    const prefix = `${t.prefix}:${run}`;
    // One host with a second URL queued, one with nothing left, in the same partition.
    const busy = 'g1.example';
    const p = f.partitionOf(busy);
    const idle = Array.from({ length: 50 }, (_, i) => `g${i + 2}.example`).find((h) => f.partitionOf(h) === p) as string;
    await f.push([item(busy, '/1'), item(busy, '/2'), item(idle, '/1')]);
    const leases = (await f.claim(p, 10)).leases.filter((l) => l.url.endsWith('/1'));
    const handed = new Map<string, string>();
    for (const lease of leases) {
      await f.acquire(ticket(lease, 'tok'));
      await f.release(ticket(lease, 'tok'), clock.now() + 100, { fetchedAliveUntil: clock.now() + 3000 });
      handed.set(lease.host, (await f.handOff(p, lease.id, 'tok', lease.url, lease.host)) as string);
    }
    expect(handed.get(busy)).toMatch(/^\d+-\d+$/);
    expect(handed.get(idle)).toMatch(/^u:\d+-\d+$/);
    expect(await t.redis.xlen(f.keysOf(p).urgent)).toBe(1);
    const stats = await f.stats();
    expect(stats.processBacklog).toBe(2);
    expect(await f.processDepth(p)).toBe(2);
    // The urgent entry comes first, even though it was handed off last.
    const reader = new ProcessStream(t.redis, prefix, 2, 'r1');
    const read = await reader.read([p], 2, 10);
    expect(read.map((e) => e.id)).toEqual([handed.get(idle), handed.get(busy)]);
    const [first, second] = read;
    expect(first).toEqual({ partition: p, id: handed.get(idle), urgent: true, payload: `http://${idle}/1`, deliveries: 1 });
    expect(second).toMatchObject({ urgent: false, payload: `http://${busy}/1` });
    // Touched, it stays this consumer's; left, another claims it with its prefix.
    await new Promise((resolve) => setTimeout(resolve, 30));
    await reader.touch(p, [first?.id as string]);
    const other = new ProcessStream(t.redis, prefix, 2, 'r2');
    expect((await other.claimStale(p, 20, 10)).map((e) => e.id)).toEqual([handed.get(busy)]);
    await new Promise((resolve) => setTimeout(resolve, 30));
    await other.touch(p, [handed.get(busy) as string]);
    expect(await other.claimStale(p, 20, 10)).toMatchObject([{ id: handed.get(idle), urgent: true, deliveries: 2 }]);
    // The ack takes each entry off its own stream, with its lease.
    expect(await f.ack(p, leases.map((l) => l.id), [...handed.values()])).toBe(2);
    expect(await t.redis.xlen(f.keysOf(p).urgent)).toBe(0);
    expect(await t.redis.xlen(f.keysOf(p).process)).toBe(0);
    expect((await f.stats()).processBacklog).toBe(0);
  });

  it('an entry its consumer left unacknowledged is claimed by another after the idle time, with its delivery count', async () => {
    const f = makeFrontier();
    const host = 'e.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1')]);
    const lease = await fetchOne(f, p, 'tok');
    await f.handOff(p, lease.id, 'tok', 'page');
    const prefix = `${t.prefix}:${run}`;
    const dead = new ProcessStream(t.redis, prefix, 2, 'dead');
    expect(await dead.read([p], 1, 10)).toHaveLength(1);
    const live = new ProcessStream(t.redis, prefix, 2, 'live');
    expect(await live.claimStale(p, 60_000, 10)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const claimed = await live.claimStale(p, 20, 10);
    expect(claimed).toMatchObject([{ partition: p, payload: 'page', deliveries: 2 }]);
    expect(await live.read([p], 1, 10)).toEqual([]);
  });

  it('expedite: the entries of a dead worker’s process stage are claimable at once, others’ are not', async () => {
    const f = makeFrontier();
    const prefix = `${t.prefix}:${run}`;
    const hosts = ['f1.example', 'f2.example', 'f3.example', 'f4.example'];
    await f.push(hosts.map((h) => item(h, '/1')));
    for (const h of hosts) {
      const p = f.partitionOf(h);
      const lease = await fetchOne(f, p, `tok-${h}`);
      await f.handOff(p, lease.id, `tok-${h}`, h);
    }
    // Two process stages read: one of the dead process (host h, pid 1), one of a live process whose pid starts alike.
    const dead = new ProcessStream(t.redis, prefix, 2, 'process@h:1:aaaaaa');
    const other = new ProcessStream(t.redis, prefix, 2, 'process@h:10:bbbbbb');
    // (COUNT applies per stream: one entry of each partition's stream.)
    const held = await dead.read([0, 1], 1, 10);
    const kept = await other.read([0, 1], 10, 10);
    expect(held.length).toBeGreaterThan(0);
    expect(held.length + kept.length).toBe(4);
    expect(await dead.expedite('process@h:1:')).toBe(held.length);
    const live = new ProcessStream(t.redis, prefix, 2, 'process@h:2:cccccc');
    const claimed = [...(await live.claimStale(0, 60_000, 10)), ...(await live.claimStale(1, 60_000, 10))];
    expect(claimed.map((e) => e.payload).sort()).toEqual(held.map((e) => e.payload).sort());
    expect(claimed.every((e) => e.deliveries === 2)).toBe(true);
  });
});

describe('takeHost: a render stage takes over the host a fetch attempt left held', () => {
  /** Claims the URL and passes the gate as the fetch attempt `fetch` (the host held, not released). */
  async function heldBy(f: Frontier, partition: number, fetchToken: string): Promise<Lease> {
    const [lease] = (await f.claim(partition, 1)).leases as [Lease];
    expect(await f.acquire(ticket(lease, fetchToken))).toMatchObject({ kind: 'ok' });
    return lease;
  }

  it('from the fetch token, or a lapsed one, never from a live one; the host stays the lease\'s throughout', async () => {
    const f = makeFrontier();
    const host = 'r.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1'), item(host, '/2')]);
    const lease = await heldBy(f, p, 'fetch');
    const render = (token: string) => ({ partition: p, host, leaseId: lease.id, token });
    expect(await f.takeHost(render('r1'), 'fetch', 6000)).toMatchObject({ kind: 'ok' });
    // A second delivery while the first renews: busy until its token lapses.
    clock.advance(1000);
    expect(await f.takeHost(render('r2'), 'fetch', 6000)).toEqual({ kind: 'busy', at: clock.now() + 5000 });
    expect(await f.takeHost(render('r1'), 'fetch', 6000)).toMatchObject({ kind: 'ok' }); // a renewal
    clock.advance(5999);
    expect(await f.takeHost(render('r2'), 'fetch', 6000)).toEqual({ kind: 'busy', at: clock.now() + 1 });
    // The first delivery died: once its token lapses, the next takes over.
    clock.advance(2);
    expect(await f.takeHost(render('r2'), 'fetch', 6000)).toMatchObject({ kind: 'ok' });
    // Meanwhile no other lease of the host passes the gate.
    const other = { partition: p, host, leaseId: 'by-hand-1', token: 'other', band: lease.band, entry: { url: `http://${host}/2`, depth: 1, hops: 0, flags: 0 } };
    expect((await f.acquire(other)).kind).toBe('busy');
    // Released and handed off: a delivery turning up later has nothing left to do.
    await f.release(render('r2'), clock.now() + 100, { leaseUntil: clock.now() + 10_000, fetchedAliveUntil: clock.now() + 3000 });
    expect(await f.handOff(p, lease.id, 'r2', '{"page":1}')).not.toBeNull();
    expect(await f.takeHost(render('r3'), 'fetch', 6000)).toEqual({ kind: 'handed' });
  });

  it('a lease gone is stale, and a lease that no longer holds its host is lost: nothing is taken', async () => {
    const f = makeFrontier();
    const host = 's.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1'), item(host, '/2')]);
    const lease = await heldBy(f, p, 'fetch');
    const render = { partition: p, host, leaseId: lease.id, token: 'r1' };
    // The host freed (its fetch attempt released it) and taken by the next lease.
    await f.release(ticket(lease, 'fetch'), clock.now());
    clock.advance(1);
    const [next] = (await f.claim(p, 1)).leases as [Lease];
    expect(await f.acquire(ticket(next, 'next'))).toMatchObject({ kind: 'ok' });
    expect(await f.takeHost(render, 'fetch', 6000)).toEqual({ kind: 'lost' });
    // Asked to retake, a claim another live lease holds is still lost.
    expect(await f.takeHost(render, 'fetch', 6000, { retake: true })).toEqual({ kind: 'lost' });
    clock.advance(10_001);
    await f.claim(p, 10); // expires the first lease
    expect(await f.takeHost(render, 'fetch', 6000)).toEqual({ kind: 'stale' });
  });

  it('a claim freed while the lease lives (a delivery died between giving the host back and handing on) is taken again only when asked, and not while a token is out', async () => {
    const f = makeFrontier();
    const host = 'u.example';
    const p = f.partitionOf(host);
    await f.push([item(host, '/1')]);
    const lease = await heldBy(f, p, 'fetch');
    const render = (token: string) => ({ partition: p, host, leaseId: lease.id, token });
    expect(await f.takeHost(render('r1'), 'fetch', 6000)).toMatchObject({ kind: 'ok' });
    // r1 rendered, gave the host back with the page's delay, and died before its hand-off.
    await f.release(render('r1'), clock.now() + 1000, { leaseUntil: clock.now() + 60_000, fetchedAliveUntil: clock.now() + 3000 });
    expect(await f.takeHost(render('r2'), 'fetch', 6000)).toEqual({ kind: 'lost' });
    // A borrowed token out (another host's page): busy, nothing taken.
    expect(await f.borrowHost(host, { holdMs: 500, withinMs: 2000 })).toMatchObject({ kind: 'granted' });
    expect(await f.takeHost(render('r2'), 'fetch', 6000, { retake: true })).toMatchObject({ kind: 'busy' });
    clock.advance(501);
    const taken = await f.takeHost(render('r2'), 'fetch', 6000, { retake: true });
    expect(taken).toMatchObject({ kind: 'ok' });
    expect(taken.kind === 'ok' && taken.dueAt).toBeGreaterThanOrEqual(clock.now() - 501 + 1000);
    const keys = f.keysOf(p);
    expect(await t.redis.hget(`${keys.base}h:${host}`, 'claim')).toBe(lease.id);
    expect(await t.redis.zscore(keys.ready, host)).toBeNull();
    // No other lease passes the gate meanwhile.
    const other = { partition: p, host, leaseId: 'by-hand-2', token: 'other', band: lease.band, entry: { url: `http://${host}/9`, depth: 1, hops: 0, flags: 0 } };
    expect((await f.acquire(other)).kind).toBe('busy');
  });
});
