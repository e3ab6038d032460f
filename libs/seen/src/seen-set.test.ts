import { testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { LuaBloomFilter } from './lua-bloom.js';
import { type ExactStore, SeenSet } from './seen-set.js';
import { randomFingerprints } from './testing/index.js';

const t = testRedis('seenset');
afterAll(() => t.cleanup());
let n = 0;

/** The exact store as a plain set (the Postgres implementation has its own tests in @trawl/db). */
class SetStore implements ExactStore {
  readonly rows = new Set<string>();
  lookups = 0;
  async existing(fps: readonly Buffer[]): Promise<Set<string>> {
    this.lookups += 1;
    return new Set(fps.map((f) => f.toString('latin1')).filter((k) => this.rows.has(k)));
  }
  insert(fps: readonly Buffer[]): void {
    for (const f of fps) this.rows.add(f.toString('latin1'));
  }
}

const bloom = (capacity: number, errorRate: number) =>
  new LuaBloomFilter(t.redis, { prefix: `${t.prefix}:${(n += 1)}`, capacity, errorRate, shards: 1 });

describe('SeenSet', () => {
  it('never drops an unseen URL on a Bloom false positive', async () => {
    // A filter far too small for its load answers "maybe seen" for most new fingerprints.
    const store = new SetStore();
    const seen = new SeenSet(bloom(10, 0.5), store);
    const first = randomFingerprints(500);
    const r1 = await seen.filterUnseen(first);
    store.insert(first);
    expect(r1.unseen.every(Boolean)).toBe(true);
    expect(r1.falsePositives).toBeGreaterThan(0);
    expect(r1.falsePositives).toBe(r1.maybeSeen);

    const fresh = randomFingerprints(500);
    const r2 = await seen.filterUnseen([...first, ...fresh]);
    expect(r2.unseen.slice(0, 500).some(Boolean)).toBe(false);
    expect(r2.unseen.slice(500).every(Boolean)).toBe(true);
  });

  it('answers repeats from the known cache without asking the store', async () => {
    const store = new SetStore();
    const seen = new SeenSet(bloom(10_000, 0.01), store);
    const fps = randomFingerprints(100);
    await seen.filterUnseen(fps);
    store.insert(fps);
    seen.markKnown(fps);
    const before = store.lookups;
    const again = await seen.filterUnseen(fps);
    expect(again.unseen.some(Boolean)).toBe(false);
    expect(again.cacheHits).toBe(100);
    expect(store.lookups).toBe(before);
  });

  it('asks the filter only about fingerprints it does not know', async () => {
    const filter = bloom(10_000, 0.01);
    const asked: Buffer[][] = [];
    const counting = Object.assign(Object.create(filter) as LuaBloomFilter, {
      addIfNew: (fps: readonly Buffer[]) => {
        asked.push([...fps]);
        return filter.addIfNew(fps);
      },
    });
    const store = new SetStore();
    const seen = new SeenSet(counting, store);
    const [nav, fresh] = [randomFingerprints(40), randomFingerprints(3)];
    await seen.filterUnseen(nav);
    store.insert(nav);
    seen.markKnown(nav);

    const verdicts = await seen.filterUnseen([...nav, ...fresh]);
    expect(verdicts.unseen).toEqual([...nav.map(() => false), true, true, true]);
    expect(verdicts.cacheHits).toBe(40);
    expect(asked.at(-1)).toEqual(fresh);
    // Everything known: neither the filter nor the store is asked.
    const lookups = store.lookups;
    const calls = asked.length;
    expect((await seen.filterUnseen(nav)).unseen.some(Boolean)).toBe(false);
    expect(asked.length).toBe(calls);
    expect(store.lookups).toBe(lookups);
  });

  it('counts a fingerprint repeated in one batch once', async () => {
    const seen = new SeenSet(bloom(1000, 0.01), new SetStore());
    const [a, b] = randomFingerprints(2) as [Buffer, Buffer];
    expect((await seen.filterUnseen([a, a, b, a])).unseen).toEqual([true, false, true, false]);
  });

  it('bounds the known cache', async () => {
    const store = new SetStore();
    const seen = new SeenSet(bloom(10_000, 0.01), store, 10);
    const fps = randomFingerprints(50);
    await seen.filterUnseen(fps);
    store.insert(fps);
    seen.markKnown(fps);
    const before = store.lookups;
    await seen.filterUnseen(fps.slice(0, 5)); // evicted long ago: must be confirmed again
    expect(store.lookups).toBe(before + 1);
  });
});
