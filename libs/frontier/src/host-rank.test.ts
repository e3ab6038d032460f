import { ManualClock } from '@trawl/core';
import { testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Frontier, type FrontierOptions, type PushItem } from './frontier.js';
import { claimRank, type HostRankOptions } from './rank.js';

// Host rank: among hosts that are due, the dispatcher claims the best-scored first (authority
// from distinct linking hosts, seeds' priority), and waiting past due outweighs score in the end.
const t: TestRedis = testRedis('frontier_rank');
afterAll(() => t.cleanup());

const LEAD = 10_000;
const RANK: HostRankOptions = { leadMs: LEAD, window: 4, weights: { authority: 1, seed: 1 } };
/** One partition, four bands, idle hosts kept an hour, ranked by RANK unless a test says otherwise. */
const OPTIONS: Omit<FrontierOptions, 'prefix' | 'clock'> = { partitions: 1, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, idleHostTtlMs: 3_600_000, rank: RANK };

// Each frontier of a test under a prefix of its own, on a clock of the test's own.
let clock = new ManualClock(1_000_000);
let frontiers = 0;
beforeEach(() => {
  clock = new ManualClock(1_000_000);
});
const makeFrontier = (overrides: Partial<FrontierOptions> = {}): Frontier => new Frontier(t.redis, { ...OPTIONS, prefix: `${t.prefix}:${(frontiers += 1)}`, clock, ...overrides });

const item = (host: string, path = '/'): PushItem => ({ host, url: `http://${host}${path}`, depth: 1, hops: 0, flags: 0, priority: 0.5 });
const links = (host: string, from: number) => Array.from({ length: from }, (_, i) => ({ host, linkedFrom: `linker${i}.example` }));
/** Pushes one URL per host, a millisecond apart: due (ready) in this order. */
async function pushInOrder(f: Frontier, hosts: readonly string[]): Promise<void> {
  for (const host of hosts) {
    await f.push([item(host)]);
    clock.advance(1);
  }
}
const claimedHosts = async (f: Frontier, max: number, partition = 0) => (await f.claim(partition, max)).leases.map((l) => l.host);

describe('host scores in the frontier', () => {
  it('keeps the highest seed priority and counts each linking host once', async () => {
    const f = makeFrontier();
    await f.noteHosts([
      { host: 'a.example', seedPriority: 0.4 },
      { host: 'a.example', seedPriority: 0.9 },
      { host: 'a.example', seedPriority: 0.2 },
      ...links('b.example', 5),
      ...links('b.example', 5),
      { host: 'b.example', linkedFrom: 'other.example' },
    ]);
    const [a, b, c] = await f.hostScores(['a.example', 'b.example', 'c.example']);
    expect(a).toMatchObject({ host: 'a.example', seedPriority: 0.9, inLinkHosts: 0, score: 0.45 });
    expect(b).toMatchObject({ host: 'b.example', seedPriority: 0, inLinkHosts: 6 });
    expect(b?.score).toBeGreaterThan(0);
    expect(c).toMatchObject({ seedPriority: 0, inLinkHosts: 0, score: 0 });
  });

  it('keeps a host\'s parts in its partition\'s slot, and lets them expire with an idle host', async () => {
    const f = makeFrontier({ partitions: 3 });
    const hosts = Array.from({ length: 12 }, (_, i) => `h${i}.example`);
    await f.noteHosts(hosts.flatMap((host) => [{ host, seedPriority: 1 }, { host, linkedFrom: 'x.example' }]));
    for (const host of hosts) {
      const { base } = f.keysOf(f.partitionOf(host));
      const keys = [`${base}h:${host}`, `${base}in:${host}`];
      for (const key of keys) {
        expect(await t.redis.exists(key)).toBe(1);
        const ttl = await t.redis.pttl(key);
        expect(ttl).toBeGreaterThan(3_500_000);
        expect(ttl).toBeLessThanOrEqual(3_600_000);
      }
    }
    // A push makes the host's hash persistent again (it has work), the seed priority stays.
    await f.push([item('h0.example')]);
    const { base } = f.keysOf(f.partitionOf('h0.example'));
    expect(await t.redis.pttl(`${base}h:h0.example`)).toBe(-1);
    expect((await f.hostScores(['h0.example']))[0]?.seedPriority).toBe(1);
  });
});

describe('claim by score among due hosts', () => {
  it('claims the best-scored of the due hosts first, where due order alone would take the first pushed', async () => {
    const hosts = ['l1', 'l2', 'l3', 'l4', 'h1', 'h2'].map((h) => `${h}.example`);
    const notes = [...links('h1.example', 20), { host: 'h2.example', seedPriority: 1 }];

    const byDue = makeFrontier({ rank: undefined });
    await pushInOrder(byDue, hosts);
    await byDue.noteHosts(notes);
    expect(await claimedHosts(byDue, 2)).toEqual(['l1.example', 'l2.example']);

    const ranked = makeFrontier();
    await pushInOrder(ranked, hosts);
    await ranked.noteHosts(notes);
    // Seed priority 1 (score 0.5) before 20 linking hosts (score ≈ 0.22), both before the rest.
    expect(await claimedHosts(ranked, 2)).toEqual(['h2.example', 'h1.example']);
    expect(await claimedHosts(ranked, 10)).toEqual(['l1.example', 'l2.example', 'l3.example', 'l4.example']);
  });

  it('never claims a host before its due time, nor ranks a host not yet due ahead of a due one', async () => {
    const f = makeFrontier();
    await f.push([item('early.example')]);
    clock.advance(5);
    await f.push([item('star.example')]);
    await f.noteHosts([{ host: 'star.example', seedPriority: 1 }, ...links('star.example', 50)]);
    clock.advance(-5);
    // star is due 5 ms from now: inside a dispatch lead of 30 ms it may be claimed (its job
    // waits at the gate), but after early, which is due now, whatever their scores.
    const claim = await f.claim(0, 1, { leadMs: 30 });
    expect(claim.leases.map((l) => l.host)).toEqual(['early.example']);
    const next = await f.claim(0, 1, { leadMs: 30 });
    expect(next.leases.map((l) => [l.host, l.dueAt])).toEqual([['star.example', clock.now() + 5]]);
    expect(await f.claim(0, 1)).toMatchObject({ leases: [] });
  });

  it('lets waiting beat score: a host of score 0 due more than the lead ago goes before a host of score 1 just due', async () => {
    for (const [waited, first] of [
      [LEAD - 1_000, 'star.example'],
      [LEAD + 1_000, 'plain.example'],
    ] as const) {
      const f = makeFrontier({ rank: { ...RANK, weights: { authority: 0, seed: 1 } } });
      await f.push([item('plain.example')]);
      clock.advance(waited);
      await f.push([item('star.example')]);
      await f.noteHosts([{ host: 'star.example', seedPriority: 1 }]);
      expect(await claimedHosts(f, 1)).toEqual([first]);
    }
  });

  it('looks only at the earliest-due limit × window hosts: a better host further back waits its turn', async () => {
    const f = makeFrontier({ rank: { ...RANK, window: 2 } });
    await pushInOrder(f, ['a', 'b', 'c', 'd', 'late-star'].map((h) => `${h}.example`));
    await f.noteHosts([{ host: 'late-star.example', seedPriority: 1 }, { host: 'b.example', seedPriority: 0.5 }]);
    // Window 2 × limit 2 = a, b, c, d: late-star is not looked at yet.
    expect(await claimedHosts(f, 2)).toEqual(['b.example', 'a.example']);
    expect(await claimedHosts(f, 2)).toEqual(['late-star.example', 'c.example']);
  });

  it('orders a claim as claimRank does with the scores hostScores reports', async () => {
    const f = makeFrontier({ rank: { ...RANK, window: 10 } });
    const hosts = Array.from({ length: 10 }, (_, i) => `r${i}.example`);
    // Due times 0..9 s apart, scores from a spread of seed priorities and linking hosts.
    for (const [i, host] of hosts.entries()) {
      await f.push([item(host)]);
      await f.noteHosts([{ host, seedPriority: ((i * 7) % 10) / 10 }, ...links(host, (i * 13) % 40)]);
      clock.advance(1_000);
    }
    const now = clock.now();
    const scores = await f.hostScores(hosts);
    const expected = scores
      .map((s, i) => ({ host: s.host, rank: claimRank(1_000_000 + i * 1_000, now, s.score, LEAD) }))
      .sort((a, b) => a.rank - b.rank)
      .map((s) => s.host);
    expect(new Set(scores.map((s) => s.score.toFixed(3))).size).toBeGreaterThan(5);
    expect(await claimedHosts(f, 10)).toEqual(expected);
  });
});
