import { ManualClock } from '@trawl/core';
import { testDatabase } from '@trawl/db/testing';
import { Frontier, type FrontierOptions } from '@trawl/frontier';
import { testRedis } from '@trawl/redis/testing';
import { createBloomFilter, SeenSet } from '@trawl/seen';
import { silentLogger } from '@trawl/telemetry';
import { fingerprint } from '@trawl/url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Counters } from './counters.js';
import { type Candidate, Discovery } from './discovery.js';
import { FrontierRefill } from './refill.js';

// Spill and refill against real Redis and PostgreSQL: a frontier capped far below what is
// discovered keeps the rest in `urls`, and refills bring each host's best back in order.

const t = testRedis('refill');
let db: Awaited<ReturnType<typeof testDatabase>>;
let clock: ManualClock;
let run = 0;
const LOCK_MS = 30_000;

beforeAll(async () => {
  db = await testDatabase('refill');
});
afterAll(async () => {
  await db.cleanup();
  await t.cleanup();
});
beforeEach(async () => {
  run += 1;
  clock = new ManualClock(1_000_000);
  await db.db.pool.query(`TRUNCATE "${db.schema}".urls`);
});

const HOSTS = ['a.example', 'b.example', 'c.example', 'd.example'];
/** Priorities of the four bands (bandOf: floor(priority × 4)). */
const PRIORITIES = [0.1, 0.3, 0.6, 0.9];

interface Crawl {
  frontier: Frontier;
  discovery: Discovery;
  refill: (frontier?: Frontier) => FrontierRefill;
}

async function crawl(options: Partial<FrontierOptions> = {}): Promise<Crawl> {
  const prefix = `${t.prefix}:${run}`;
  const makeFrontier = () =>
    new Frontier(t.redis, { prefix, partitions: 2, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 250, maxUrlsPerHost: 0, redisMaxUrls: 12, hostHeadUrls: 4, clock, ...options });
  const frontier = makeFrontier();
  const bloom = await createBloomFilter(t.redis, { prefix, capacity: 10_000, errorRate: 0.01, shards: 1 }, 'lua');
  const discovery = new Discovery(
    {
      seen: new SeenSet(bloom, db.db),
      db: db.db,
      frontier,
      counters: new Counters(t.redis, prefix, 60_000),
      logger: silentLogger,
      limits: () => ({ maxUrlsPerHost: 0, maxQueryVariants: 0, maxDateVariants: 0 }),
    },
    // One URL per batch: discovery order is then the order of `urls.id` and of the pushes alike.
    { maxBatch: 1, maxWaitMs: 0 },
  );
  return {
    frontier,
    discovery,
    refill: (other = makeFrontier()) => new FrontierRefill({ db: db.db, frontier: other, logger: silentLogger }, { lockMs: LOCK_MS }),
  };
}

interface Planned {
  url: string;
  host: string;
  band: number;
  seq: number;
}

/** Bands mixed at random (a fixed pattern). */
const mixedBands = (i: number, h: number): number => (i * 7 + h * 3) % 4;
/** The low band, but every fifth URL a higher one: URLs that outrank what their hosts hold. */
const fewBoosts = (i: number, h: number): number => ((i + h) % 5 === 4 ? 3 : 1);

/** `perHost` URLs of each host, hosts interleaved, bands as `bandOf` says; discovered one by one. */
async function discover(c: Crawl, perHost: number, from = 0, bandOf = fewBoosts): Promise<Planned[]> {
  const planned: Planned[] = [];
  for (let i = from; i < from + perHost; i += 1) {
    for (const [h, host] of HOSTS.entries()) {
      const band = bandOf(i, h);
      const url = `http://${host}/p${i}`;
      const candidate: Candidate = { url, hash: fingerprint(url), host, depth: 1, hops: 0, flags: 0, priority: PRIORITIES[band] as number, from: null };
      await c.discovery.add([candidate]);
      planned.push({ url, host, band, seq: planned.length + from * HOSTS.length });
    }
  }
  return planned;
}

/** What each host must be fetched in: highest band first, then discovery order. */
function expectedOrder(planned: readonly Planned[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const host of HOSTS) {
    out[host] = planned
      .filter((p) => p.host === host)
      .sort((a, b) => b.band - a.band || a.seq - b.seq)
      .map((p) => p.url);
  }
  return out;
}

/** One URL of every due host, fetched: released and acknowledged at once. Returns the hosts fetched from. */
async function fetchRound(c: Crawl, fetched: Record<string, string[]>): Promise<Set<string>> {
  const got = new Set<string>();
  for (const p of [0, 1]) {
    for (const lease of (await c.frontier.claim(p, 100)).leases) {
      (fetched[lease.host] ??= []).push(lease.url);
      got.add(lease.host);
      await c.frontier.release({ partition: p, host: lease.host, leaseId: lease.id, token: 'attempt' }, clock.now());
      await c.frontier.ack(p, [lease.id]);
    }
  }
  return got;
}

interface Drained {
  fetched: Record<string, string[]>;
  /** Rounds in which a host that still had URLs (in Redis or PostgreSQL) got none: it waited on a refill. */
  starved: number;
  peakRedisQueued: number;
}

/**
 * Fetches everything: each round, refills (every refiller, every partition, at once), then one
 * URL of every due host, released and acknowledged at once.
 */
async function drain(c: Crawl, refills: readonly FrontierRefill[], remaining: Map<string, number>, maxRounds = 500): Promise<Drained> {
  const fetched: Record<string, string[]> = Object.fromEntries(HOSTS.map((h) => [h, []]));
  let starved = 0;
  let peakRedisQueued = 0;
  for (let round = 0; round < maxRounds; round += 1) {
    await Promise.all(refills.flatMap((r) => [0, 1].map((p) => r.run(p))));
    const got = await fetchRound(c, fetched);
    for (const [host, left] of remaining) {
      if (left > 0 && !got.has(host)) starved += 1;
      remaining.set(host, got.has(host) ? left - 1 : left);
    }
    const stats = await c.frontier.stats();
    peakRedisQueued = Math.max(peakRedisQueued, stats.queued);
    if (stats.queued + stats.spilled + stats.leased === 0) break;
  }
  return { fetched, starved, peakRedisQueued };
}

/** `rounds` rounds of fetching without refilling: the hosts' Redis queues run low. */
async function fetchWithoutRefill(c: Crawl, rounds: number): Promise<Record<string, string[]>> {
  const fetched: Record<string, string[]> = Object.fromEntries(HOSTS.map((h) => [h, []]));
  for (let round = 0; round < rounds; round += 1) await fetchRound(c, fetched);
  return fetched;
}

/** Two fetch logs of one crawl, one after the other. */
const joined = (a: Record<string, string[]>, b: Record<string, string[]>): Record<string, string[]> =>
  Object.fromEntries(HOSTS.map((h) => [h, [...(a[h] ?? []), ...(b[h] ?? [])]]));

/**
 * A crawl whose hosts run low, and a refill round begun by hand that has read PostgreSQL (its
 * rows tagged) and pushed nothing yet: what a crash or a stall can leave.
 */
async function roundUnderWay(c: Crawl) {
  const planned = await discover(c, 20);
  const early = await fetchWithoutRefill(c, 6);
  const p = c.frontier.partitionOf('a.example');
  const ticket = await c.frontier.beginRefill(p, 200, LOCK_MS);
  if (ticket === null) throw new Error('no host needs a refill');
  const taken = await db.db.takeSpilled(ticket.token, ticket.hosts);
  expect(taken.length).toBeGreaterThan(0);
  const found = new Map<string, number>();
  for (const item of taken) found.set(item.host, (found.get(item.host) ?? 0) + 1);
  return { planned, early, p, ticket, taken, found };
}

const countsOf = (planned: readonly Planned[]) => new Map(HOSTS.map((h) => [h, planned.filter((p) => p.host === h).length]));

async function spilledRows(): Promise<number> {
  const { rows } = await db.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${db.schema}".urls WHERE spill_band IS NOT NULL`);
  return Number(rows[0]?.n ?? 0);
}

describe('a frontier over its Redis cap', () => {
  it('spills to PostgreSQL past the cap, then fetches every URL once, each host in band and discovery order, never waiting on a refill', async () => {
    const c = await crawl({ hostHeadUrls: 8 });
    const planned = await discover(c, 30);
    const stats = await c.frontier.stats();
    // 120 URLs, 12 in Redis — plus each host's head (8), and URLs that outrank their host's lowest
    // while it holds fewer than twice its head (here every one of them: so the order is exact).
    expect(stats.queued).toBeLessThanOrEqual(12 + HOSTS.length * 2 * 8);
    expect(stats.spilled).toBeGreaterThan(50);
    expect(stats.queued + stats.spilled).toBe(120);
    expect(await spilledRows()).toBe(stats.spilled);
    expect(await db.db.hasSpilledUrls()).toBe(true);
    const { rows } = await db.db.pool.query<{ state: string; n: string }>(`SELECT state, count(*) AS n FROM "${db.schema}".urls GROUP BY state`);
    expect(rows).toEqual([{ state: 'queued', n: '120' }]);

    const drained = await drain(c, [c.refill()], countsOf(planned));
    expect(drained.fetched).toEqual(expectedOrder(planned));
    expect(drained.starved).toBe(0);
    expect(await spilledRows()).toBe(0);
    expect(await db.db.hasSpilledUrls()).toBe(false);
    expect(await c.frontier.stats()).toMatchObject({ queued: 0, spilled: 0, leased: 0 });
  });

  it('with bands mixed at random, Redis stays bounded; every URL is fetched once, each band of a host in discovery order', async () => {
    const c = await crawl();
    const planned = await discover(c, 30, 0, mixedBands);
    const stats = await c.frontier.stats();
    expect(stats.queued).toBeLessThanOrEqual(12 + HOSTS.length * 2 * 4);
    expect(stats.spilled).toBeGreaterThan(60);
    const drained = await drain(c, [c.refill()], countsOf(planned));
    expect(drained.starved).toBe(0);
    for (const host of HOSTS) {
      const got = drained.fetched[host] as string[];
      expect([...got].sort()).toEqual(planned.filter((p) => p.host === host).map((p) => p.url).sort());
      for (let band = 0; band < 4; band += 1) {
        const inBand = planned.filter((p) => p.host === host && p.band === band).map((p) => p.url);
        expect(got.filter((url) => inBand.includes(url))).toEqual(inBand);
      }
    }
  });

  it('keeps order when URLs keep arriving while hosts are drained', async () => {
    const c = await crawl();
    const first = await discover(c, 10);
    // Fetch a few rounds, then discover more: new URLs join behind (or, in a higher band, ahead of) the spilled ones.
    const refill = c.refill();
    const fetched: Record<string, string[]> = Object.fromEntries(HOSTS.map((h) => [h, []]));
    for (let round = 0; round < 3; round += 1) {
      await Promise.all([0, 1].map((p) => refill.run(p)));
      await fetchRound(c, fetched);
    }
    const second = await discover(c, 10, 10);
    const rest = await drain(c, [refill], new Map());
    for (const host of HOSTS) {
      const all = [...(fetched[host] as string[]), ...(rest.fetched[host] as string[])];
      expect(new Set(all).size).toBe(20);
      // Of the first three, what the order said then; the rest in order among what was left.
      const before = expectedOrder(first)[host] as string[];
      expect(all.slice(0, 3)).toEqual(before.slice(0, 3));
      const left = [...first, ...second].filter((p) => p.host === host && !all.slice(0, 3).includes(p.url));
      expect(all.slice(3)).toEqual(expectedOrder(left)[host]);
    }
  });

  it('several processes refilling at once queue every URL once, in order', async () => {
    const c = await crawl();
    const planned = await discover(c, 20);
    const drained = await drain(c, [c.refill(), c.refill(), c.refill()], countsOf(planned));
    expect(drained.fetched).toEqual(expectedOrder(planned));
    expect(drained.starved).toBe(0);
  });

  it('a refill that died between reading PostgreSQL and pushing to Redis loses nothing: the next round after its lock takes its rows again', async () => {
    const c = await crawl();
    const { planned, early, p } = await roundUnderWay(c);
    // …and its process is gone: its lock holds the partition's refills until it lapses.
    expect(await c.refill().run(p)).toBe(0);
    clock.advance(LOCK_MS + 1);
    const drained = await drain(c, [c.refill()], new Map());
    expect(joined(early, drained.fetched)).toEqual(expectedOrder(planned));
    expect(await db.db.unsettledRefills(p)).toEqual([]);
  });

  it('a refill that died between pushing to Redis and recording it in PostgreSQL queues nothing twice', async () => {
    const c = await crawl();
    const { planned, early, p, ticket, taken, found } = await roundUnderWay(c);
    expect(await c.frontier.landRefill(ticket, found, taken, 600_000)).toBe('landed');
    // Landing twice does nothing.
    expect(await c.frontier.landRefill(ticket, found, taken, 600_000)).toBe('applied');
    // The next round settles it as landed: its rows are no longer spilled, and are not taken again.
    const drained = await drain(c, [c.refill()], new Map());
    expect(joined(early, drained.fetched)).toEqual(expectedOrder(planned));
    expect(await db.db.unsettledRefills(p)).toEqual([]);
  });

  it('a refill that stalled past its lock lands nothing once another round has begun', async () => {
    const c = await crawl();
    const { planned, early, p, ticket, taken, found } = await roundUnderWay(c);
    clock.advance(LOCK_MS + 1);
    // Another process refills (settling the stalled round's rows as void, and taking them itself).
    expect(await c.refill().run(p)).toBeGreaterThan(0);
    expect(await c.frontier.landRefill(ticket, found, taken, 600_000)).toBe('void');
    const drained = await drain(c, [c.refill()], new Map());
    expect(joined(early, drained.fetched)).toEqual(expectedOrder(planned));
  });

  it("a host's spilled count that PostgreSQL does not back (a crash between the push and its write) is reset after the grace period", async () => {
    const c = await crawl({ hostHeadUrls: 1, redisMaxUrls: 2 });
    const items = ['/1', '/2', '/3'].map((path) => ({ url: `http://a.example${path}`, host: 'a.example', depth: 1, hops: 0, flags: 0, priority: 0.5 }));
    // Pushed, spilled, and the process died before writing the spill to PostgreSQL.
    expect((await c.frontier.push(items, { spill: true })).spills).toHaveLength(2);
    const p = c.frontier.partitionOf('a.example');
    await fetchWithoutRefill(c, 1);
    const refill = new FrontierRefill({ db: db.db, frontier: c.frontier, logger: silentLogger }, { lockMs: LOCK_MS, graceMs: 60_000 });
    expect(await refill.run(p)).toBe(0);
    expect(await c.frontier.hostState('a.example')).toMatchObject({ spilled: 2 });
    // PostgreSQL, the authority on what waits there, holds none of them (`trawl crawl` ends on it).
    expect(await db.db.hasSpilledUrls()).toBe(false);
    clock.advance(59_000);
    await refill.run(p);
    expect(await c.frontier.hostState('a.example')).toMatchObject({ spilled: 2 });
    clock.advance(1000);
    await refill.run(p);
    expect(await c.frontier.hostState('a.example')).toMatchObject({ spilled: 0 });
    expect(await c.frontier.stats()).toMatchObject({ spilled: 0 });
    expect(await c.frontier.beginRefill(p, 200, LOCK_MS)).toBeNull();
  });

  it('without a cap nothing spills (every URL in Redis, as before)', async () => {
    const c = await crawl({ redisMaxUrls: 0 });
    await discover(c, 10);
    expect(await c.frontier.stats()).toMatchObject({ queued: 40, spilled: 0 });
    expect(await spilledRows()).toBe(0);
    expect(await c.frontier.beginRefill(0, 200, LOCK_MS)).toBeNull();
  });
});
