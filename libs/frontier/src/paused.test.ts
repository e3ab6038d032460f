import { ManualClock } from '@trawl/core';
import { testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Frontier, type FrontierOptions, type Lease, type PushItem } from './frontier.js';

// Operator pause: a paused host is never claimed by the dispatcher and never passes the gate.
const t: TestRedis = testRedis('frontier_pause');
afterAll(() => t.cleanup());
let clock: ManualClock;
let run = 0;
beforeEach(() => {
  run += 1;
  clock = new ManualClock(1_000_000);
});

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

const item = (host: string, path: string): PushItem => ({ host, url: `http://${host}${path}`, depth: 1, hops: 0, flags: 0, priority: 0.5 });
const ticket = (lease: Lease, token = 'tok-1') => ({ partition: lease.partition, host: lease.host, leaseId: lease.id, token, band: lease.band, entry: lease });

describe('Frontier pause', () => {
  it('never claims a paused host, and claims it again once resumed', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1'), item('a', '/2'), item('b', '/1')]);
    await f.pauseHost('a');
    expect(await f.paused()).toEqual({ all: false, hosts: ['a'] });
    expect(await f.isPaused('a')).toBe(true);
    expect(await f.isPaused('b')).toBe(false);
    const claim = await f.claim(0, 10);
    expect(claim.leases.map((l) => l.host)).toEqual(['b']);
    clock.advance(10_000);
    expect((await f.claim(0, 10)).leases).toEqual([]);
    // Its URLs are still queued, not lost.
    expect((await f.hostState('a')).queued).toBe(2);
    expect(await f.resumeHost('a')).toBe(true);
    expect(await f.resumeHost('a')).toBe(false);
    const after = await f.claim(0, 10);
    expect(after.leases.map((l) => l.url)).toEqual(['http://a/1']);
  });

  it('drops a paused host that comes back to the ready heap (a push) without claiming it', async () => {
    const f = makeFrontier();
    await f.pauseHost('a');
    await f.push([item('a', '/1')]); // pushing re-enters the ready heap; the claim must still skip it
    expect((await f.claim(0, 10)).leases).toEqual([]);
    expect((await f.stats()).hostsWaiting).toBe(0);
    await f.resumeHosts(['a']);
    expect((await f.stats()).hostsWaiting).toBe(1);
    expect((await f.claim(0, 10)).leases).toHaveLength(1);
  });

  it('turns away at the gate a job dispatched before the pause, and returns its URL to the frontier', async () => {
    const f = makeFrontier();
    await f.push([item('a', '/1')]);
    const [lease] = (await f.claim(0, 10)).leases as [Lease];
    await f.pauseHost('a');
    expect(await f.acquire(ticket(lease))).toEqual({ kind: 'paused' });
    const stats = await f.stats();
    expect(stats.queued).toBe(1);
    expect(stats.leased).toBe(0);
    // The old job is now stale: even after the resume it is never fetched.
    await f.resumeHost('a');
    expect(await f.acquire(ticket(lease, 'tok-2'))).toEqual({ kind: 'stale' });
    const [again] = (await f.claim(0, 10)).leases as [Lease];
    expect(again.url).toBe('http://a/1');
    expect(await f.acquire(ticket(again))).toMatchObject({ kind: 'ok' });
  });

  it('turns away a job without a lease (a retried dead letter) and keeps its URL', async () => {
    const f = makeFrontier();
    await f.pauseHost('a');
    const adopted = { partition: 0, host: 'a', leaseId: 'r-fresh-1', token: 't', band: 1, entry: { url: 'http://a/x', depth: 0, hops: 0, flags: 0 } };
    expect(await f.acquire(adopted)).toEqual({ kind: 'paused' });
    expect((await f.hostState('a')).queued).toBe(1);
    await f.resumeHost('a');
    const claim = await f.claim(0, 10);
    expect(claim.leases.map((l) => l.url)).toEqual(['http://a/x']);
  });

  it('pauses and resumes the whole crawl, across partitions, leaving single-host pauses alone', async () => {
    const f = makeFrontier({ partitions: 4 });
    const hosts = ['a', 'b', 'c', 'd', 'e', 'f'];
    await f.push(hosts.map((h) => item(h, '/1')));
    await f.pauseHost('c');
    await f.pauseAll();
    expect(await f.paused()).toEqual({ all: true, hosts: ['c'] });
    expect(await f.isPaused('a')).toBe(true);
    for (let p = 0; p < 4; p += 1) {
      const claim = await f.claim(p, 10);
      expect(claim).toMatchObject({ leases: [], paused: true, nextDueAt: null });
    }
    const adopted = { partition: f.partitionOf('a'), host: 'a', leaseId: 'r-1', token: 't', band: 0, entry: { url: 'http://a/y', depth: 0, hops: 0, flags: 0 } };
    expect(await f.acquire(adopted)).toEqual({ kind: 'paused' });
    await f.resumeAll();
    expect(await f.paused()).toEqual({ all: false, hosts: ['c'] });
    const claimed: string[] = [];
    for (let p = 0; p < 4; p += 1) claimed.push(...(await f.claim(p, 10)).leases.map((l) => l.host));
    expect(claimed.sort()).toEqual(['a', 'b', 'd', 'e', 'f']);
  });

  it('refuses a name that is not a host', async () => {
    const f = makeFrontier();
    await expect(f.pauseHosts(['*'])).rejects.toThrow(/not a host name/);
  });

  it('samples hosts with work from the ready heaps and the leases', async () => {
    const f = makeFrontier({ partitions: 2 });
    await f.push(['a', 'b', 'c', 'd'].map((h) => item(h, '/1')));
    const p = f.partitionOf('a');
    await f.claim(p, 1);
    expect((await f.sampleHosts(10)).sort()).toEqual(['a', 'b', 'c', 'd']);
    expect((await f.sampleHosts(1)).length).toBeLessThanOrEqual(4);
  });
});
