import { gzipSync } from 'node:zlib';
import type { Redis } from '@trawl/redis';
import { testRedis } from '@trawl/redis/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BloomFilter, BloomOptions } from './bloom.js';
import { LuaBloomFilter } from './lua-bloom.js';
import { RedisBloomFilter } from './redisbloom.js';
import { SeenSnapshots, type SnapshotObjects } from './snapshot.js';
import { mismatch, parseManifest, type SnapshotManifest, type SnapshotTarget } from './snapshot-format.js';
import { randomFingerprints, testRedisBloom } from './testing/index.js';

/** Snapshot objects in memory (the real stores, disk and S3, are tested in @trawl/store). */
class MemoryObjects implements SnapshotObjects {
  readonly data = new Map<string, Buffer>();
  async put(name: string, bytes: Uint8Array): Promise<void> {
    this.data.set(name, Buffer.from(bytes));
  }
  async get(name: string): Promise<Buffer | null> {
    return this.data.get(name) ?? null;
  }
  async list(prefix: string): Promise<string[]> {
    return [...this.data.keys()].filter((k) => k.startsWith(prefix));
  }
  async delete(names: readonly string[]): Promise<void> {
    for (const name of names) this.data.delete(name);
  }
}

const plain = testRedis('seensnap');
const rb = testRedisBloom('seensnap');
afterAll(async () => {
  await plain.cleanup();
  await rb.cleanup();
});

const intact = async () => true;
const coverage = (maxUrlId: number) => async () => ({ maxUrlId, urlsTable: '4242' });
const target = (backend: BloomFilter['backend'], options: BloomOptions, maxUrlId = 1000) => ({ backend, options, maxUrlId, urlsTable: '4242' });
let n = 0;

interface Backend {
  name: string;
  ready: () => Promise<void>;
  redis: () => Redis;
  prefix: () => string;
  make: (redis: Redis, options: BloomOptions) => BloomFilter;
}
const backends: Backend[] = [
  { name: 'lua-bitmap', ready: async () => undefined, redis: () => plain.redis, prefix: () => plain.prefix, make: (r, o) => new LuaBloomFilter(r, o) },
  { name: 'redisbloom', ready: rb.ready, redis: () => rb.redis, prefix: () => rb.prefix, make: (r, o) => new RedisBloomFilter(r, o) },
];

for (const backend of backends) {
  describe(`seen-set snapshots: ${backend.name}`, () => {
    let redis: Redis;
    let options: BloomOptions;
    let filter: BloomFilter;
    let objects: MemoryObjects;
    let snapshots: SeenSnapshots;
    // Past the first layer's capacity, so the filter has grown layers (sub-filters) to copy.
    const members = randomFingerprints(6000);

    beforeAll(async () => {
      await backend.ready();
      redis = backend.redis();
      options = { prefix: `${backend.prefix()}:n${(n += 1)}`, capacity: 2000, errorRate: 0.01, shards: 2 };
      filter = backend.make(redis, options);
      objects = new MemoryObjects();
      // Small reads and parts, so even this filter is copied in many of each.
      snapshots = new SeenSnapshots(redis, options, filter.backend, objects, { readBytes: 512, partBytes: 2048 });
      for (let i = 0; i < members.length; i += 1000) await filter.addIfNew(members.slice(i, i + 1000));
      expect((await filter.info()).layers).toBeGreaterThan(1);
    });

    it('round trip: a wiped filter loaded from its snapshot holds every member, and no more than its error rate of strangers', async () => {
      const taken = await snapshots.take(coverage(600), intact, 3);
      if ('skipped' in taken) throw new Error(taken.skipped);
      expect(taken).toMatchObject({ coversUrlId: 600 });
      expect(taken.parts).toBeGreaterThan(2 * options.shards);
      const before = await filter.info();

      // Redis loses the filter; the live crawl adds a few URLs before the rebuild loads it.
      await filter.clear();
      await filter.addIfNew(randomFingerprints(10));
      const loaded = await snapshots.load(target(filter.backend, options));
      expect(loaded).toMatchObject({ id: taken.id, coversUrlId: 600, refused: [] });
      expect((await filter.mightContain(members)).every(Boolean)).toBe(true);
      const strangers = await filter.mightContain(randomFingerprints(5000));
      expect(strangers.filter(Boolean).length / strangers.length).toBeLessThan(0.02);
      const after = await filter.info();
      expect(after.layers).toBe(before.layers);
      expect(after.items).toBe(before.items);
      // The filter goes on working: new items are new, members are not. New ones read as members
      // only at the filter's false-positive rate (~1-2 % over its layers): of 1,000, over 50 would
      // be a broken filter (more than 6 standard deviations out), where 5 of 100 happened by chance.
      const added = await filter.addIfNew([...randomFingerprints(1000), members[0] as Buffer]);
      expect(added.slice(0, 1000).filter(Boolean).length).toBeGreaterThan(950);
      expect(added[1000]).toBe(false);
      // No restore keys are left behind.
      const restoreKeys = await redis.keys(`${options.prefix}:*restore*`);
      expect(restoreKeys).toEqual([]);
    });

    it('a corrupt part refuses its snapshot and leaves the live filter as it was; the next older one is loaded', async () => {
      objects.data.clear();
      const older = await snapshots.take(coverage(700), intact, 5, Date.now() - 1000);
      const newer = await snapshots.take(coverage(800), intact, 5);
      if ('skipped' in older || 'skipped' in newer) throw new Error('skipped');
      const manifest = parseManifest((await objects.get(`${options.prefix}/${newer.id}/manifest.json`)) as Buffer) as SnapshotManifest;
      const part = manifest.shardData[1]?.parts[0];
      if (part === undefined) throw new Error('no part');
      // A flipped byte inside valid gzip: only the checksum can tell.
      const data = Buffer.from(gzipSync(Buffer.alloc(part.bytes, 0xff)));
      await objects.put(part.name, data);

      await filter.clear();
      const live = randomFingerprints(20);
      await filter.addIfNew(live);
      const loaded = await snapshots.load(target(filter.backend, options));
      expect(loaded).toMatchObject({ id: older.id, coversUrlId: 700 });
      expect(loaded.refused).toEqual([expect.stringContaining('does not match its checksum')]);
      expect((await filter.mightContain(members)).every(Boolean)).toBe(true);

      // Only the corrupt one left: refused, and the filter is not touched.
      await objects.delete([...objects.data.keys()].filter((k) => !k.includes(newer.id)));
      await filter.clear();
      await filter.addIfNew(live);
      const fallback = await snapshots.load(target(filter.backend, options));
      expect(fallback).toMatchObject({ fallback: expect.stringContaining('does not match its checksum') });
      expect((await filter.mightContain(live)).every(Boolean)).toBe(true);
      expect((await filter.mightContain(members)).filter(Boolean).length).toBeLessThan(members.length / 10);
      expect(await redis.keys(`${options.prefix}:*restore*`)).toEqual([]);
    });

    it('a snapshot without its manifest (a run that died) is never loaded; a truncated manifest or a missing part is refused', async () => {
      objects.data.clear();
      const taken = await snapshots.take(coverage(900), intact, 3);
      if ('skipped' in taken) throw new Error(taken.skipped);
      const manifestName = `${options.prefix}/${taken.id}/manifest.json`;
      const manifest = (await objects.get(manifestName)) as Buffer;
      await objects.put(manifestName, manifest.subarray(0, manifest.length - 20));
      expect(await snapshots.load(target(filter.backend, options))).toMatchObject({ fallback: expect.stringContaining('not JSON') });
      // A part gone (a store that lost an object): refused, naming it.
      await objects.put(manifestName, manifest);
      const part = [...objects.data.keys()].find((k) => k.includes(taken.id) && k.endsWith('.gz')) as string;
      const kept = (await objects.get(part)) as Buffer;
      await objects.delete([part]);
      expect(await snapshots.load(target(filter.backend, options))).toMatchObject({ fallback: expect.stringContaining(`part ${part} is missing`) });
      await objects.put(part, kept);
      await objects.delete([manifestName]);
      expect(await snapshots.load(target(filter.backend, options))).toMatchObject({ fallback: 'no snapshot of this namespace in the store' });
    });

    it('a snapshot of other filter parameters is refused with the reason', async () => {
      objects.data.clear();
      await snapshots.take(coverage(900), intact, 3);
      const other = { ...options, shards: 4 };
      expect(await snapshots.load(target(filter.backend, other))).toMatchObject({ fallback: expect.stringContaining('TRAWL_SEEN_SHARDS is 4') });
      const otherBackend = filter.backend === 'redisbloom' ? 'lua-bitmap' : 'redisbloom';
      expect(await snapshots.load(target(otherBackend, options))).toMatchObject({ fallback: expect.stringContaining(`the crawl's seen-set is ${otherBackend}`) });
    });
  });
}

describe('seen-set snapshots: reading and keeping', () => {
  it('reads a Lua bitmap with GETRANGE in bounded steps, never a whole-key GET', async () => {
    const options = { prefix: `${plain.prefix}:reads`, capacity: 20_000, errorRate: 0.01, shards: 1 };
    const filter = new LuaBloomFilter(plain.redis, options);
    await filter.addIfNew(randomFingerprints(5000));
    const getrange = vi.spyOn(plain.redis, 'getrangeBuffer');
    const get = vi.spyOn(plain.redis, 'getBuffer');
    try {
      const snapshots = new SeenSnapshots(plain.redis, options, 'lua-bitmap', new MemoryObjects(), { readBytes: 4096 });
      const taken = await snapshots.take(coverage(1), intact, 1);
      expect(taken).not.toHaveProperty('skipped');
      const bitmapBytes = await plain.redis.strlen(`${plain.prefix}:reads:{s0}:seen:b:0`);
      expect(getrange.mock.calls.length).toBe(Math.ceil(bitmapBytes / 4096));
      for (const [, start, end] of getrange.mock.calls) expect(Number(end) - Number(start) + 1).toBeLessThanOrEqual(4096);
      expect(get).not.toHaveBeenCalled();
    } finally {
      getrange.mockRestore();
      get.mockRestore();
    }
  });

  it('skips while the crawl is not intact, keeps the newest few, and removes parts of runs that died', async () => {
    const options = { prefix: `${plain.prefix}:keep`, capacity: 1000, errorRate: 0.01, shards: 1 };
    const filter = new LuaBloomFilter(plain.redis, options);
    await filter.addIfNew(randomFingerprints(100));
    const objects = new MemoryObjects();
    const snapshots = new SeenSnapshots(plain.redis, options, 'lua-bitmap', objects);
    expect(await snapshots.take(coverage(1), async () => false, 2)).toMatchObject({ skipped: expect.stringContaining('rebuild') });
    // Redis lost the crawl while the filter was read: the copy is not kept.
    let calls = 0;
    expect(await snapshots.take(coverage(1), async () => (calls += 1) === 1, 2)).toMatchObject({ skipped: expect.stringContaining('while the filter was read') });
    expect(objects.data.size).toBe(0);
    // Redis lost the crawl and a rebuild restored it while the filter was read: both intact checks
    // pass, but the marker went with the wipe.
    const torn = await snapshots.take(
      async () => {
        const markers = await plain.redis.keys(`${options.prefix}:seen-snapshot:*`);
        expect(markers).toHaveLength(1);
        await plain.redis.unlink(...markers);
        return { maxUrlId: 1, urlsTable: '4242' };
      },
      intact,
      2,
    );
    expect(torn).toMatchObject({ skipped: expect.stringContaining('while the filter was read') });
    expect(objects.data.size).toBe(0);
    expect(await plain.redis.keys(`${options.prefix}:seen-snapshot:*`)).toEqual([]);
    const t0 = Date.now() - 10_000;
    // A run that died after writing a part, before its manifest.
    await objects.put(`${options.prefix}/${String(t0 - 5000).padStart(15, '0')}-dead/s0-l0-0.gz`, Buffer.from('x'));
    expect(await snapshots.list()).toEqual([]);
    for (let i = 0; i < 4; i += 1) await snapshots.take(coverage(i), intact, 2, t0 + i * 1000);
    const ids = await snapshots.list();
    expect(ids).toHaveLength(2);
    expect(ids[0] as string > (ids[1] as string)).toBe(true);
    // Only the kept snapshots' objects are left: the died run's parts and the older snapshots are gone.
    expect([...objects.data.keys()].every((k) => ids.some((id) => k.includes(id)))).toBe(true);
  });

  it('refuses what does not match: backend, capacity, error rate, shards, another urls table, ids ahead of PostgreSQL', () => {
    const manifest = { backend: 'lua-bitmap', capacity: 1000, errorRate: 0.01, shards: 2, urlsTable: '7', coversUrlId: 50 } as SnapshotManifest;
    const options = { capacity: 1000, errorRate: 0.01, shards: 2 };
    const ok: SnapshotTarget = { backend: 'lua-bitmap', options, maxUrlId: 50, urlsTable: '7' };
    expect(mismatch(manifest, ok)).toBeNull();
    const cases: [Partial<SnapshotTarget>, RegExp][] = [
      [{ backend: 'redisbloom' }, /backend lua-bitmap/],
      [{ options: { ...options, capacity: 2000 } }, /TRAWL_SEEN_CAPACITY/],
      [{ options: { ...options, errorRate: 0.001 } }, /TRAWL_SEEN_ERROR_RATE/],
      [{ options: { ...options, shards: 1 } }, /TRAWL_SEEN_SHARDS/],
      [{ urlsTable: '8' }, /another urls table/],
      [{ maxUrlId: 49 }, /highest is 49/],
    ];
    for (const [change, reason] of cases) expect(mismatch(manifest, { ...ok, ...change })).toMatch(reason);
  });
});
