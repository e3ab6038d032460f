import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BloomFilter, BloomOptions } from '../bloom.js';

export const randomFingerprints = (n: number): Buffer[] => Array.from({ length: n }, () => randomBytes(16));

/**
 * The contract every Bloom backend meets. `make` returns a fresh, empty filter for the given
 * options (its own key namespace) and a cleanup.
 */
export function bloomContract(
  name: string,
  make: (options: Omit<BloomOptions, 'prefix'>) => Promise<{ filter: BloomFilter; cleanup: () => Promise<void> }>,
  available: () => Promise<boolean> = async () => true,
): void {
  describe(`Bloom filter contract: ${name}`, async () => {
    const ok = await available();
    if (!ok) {
      // Said plainly, not silently skipped: this server cannot run this backend.
      console.warn(`[seen] ${name}: the Redis server lacks this backend (no RedisBloom module); its contract run is skipped here.`);
    }
    const test = ok ? it : it.skip;

    test('says new once, then maybe-seen', async () => {
      const { filter, cleanup } = await make({ capacity: 10_000, errorRate: 0.01, shards: 1 });
      try {
        const fps = randomFingerprints(100);
        expect((await filter.addIfNew(fps)).every(Boolean)).toBe(true);
        expect((await filter.addIfNew(fps)).some(Boolean)).toBe(false);
        expect((await filter.mightContain(fps)).every(Boolean)).toBe(true);
      } finally {
        await cleanup();
      }
    });

    test('a fingerprint repeated in one batch is new only once', async () => {
      const { filter, cleanup } = await make({ capacity: 1000, errorRate: 0.01, shards: 1 });
      try {
        const [a, b] = randomFingerprints(2) as [Buffer, Buffer];
        expect(await filter.addIfNew([a, b, a, Buffer.from(a)])).toEqual([true, true, false, false]);
      } finally {
        await cleanup();
      }
    });

    test('mightContain does not add', async () => {
      const { filter, cleanup } = await make({ capacity: 1000, errorRate: 0.01, shards: 1 });
      try {
        const fps = randomFingerprints(50);
        expect((await filter.mightContain(fps)).some(Boolean)).toBe(false);
        expect((await filter.addIfNew(fps)).every(Boolean)).toBe(true);
      } finally {
        await cleanup();
      }
    });

    test('keeps its false-positive rate near the target at capacity', async () => {
      const capacity = 50_000;
      const { filter, cleanup } = await make({ capacity, errorRate: 0.01, shards: 1 });
      try {
        for (let i = 0; i < capacity; i += 5000) await filter.addIfNew(randomFingerprints(5000));
        const probes = await filter.mightContain(randomFingerprints(20_000));
        const rate = probes.filter(Boolean).length / probes.length;
        expect(rate).toBeLessThan(0.02);
        const info = await filter.info();
        expect(info.items).toBeGreaterThan(capacity * 0.98);
        expect(info.bytes).toBeGreaterThan(0);
      } finally {
        await cleanup();
      }
    });

    test('grows past its capacity without losing members or its error bound', async () => {
      const { filter, cleanup } = await make({ capacity: 2000, errorRate: 0.01, shards: 1 });
      try {
        const members = randomFingerprints(10_000);
        for (let i = 0; i < members.length; i += 1000) await filter.addIfNew(members.slice(i, i + 1000));
        expect((await filter.mightContain(members)).every(Boolean)).toBe(true);
        const probes = await filter.mightContain(randomFingerprints(10_000));
        expect(probes.filter(Boolean).length / probes.length).toBeLessThan(0.02);
        expect((await filter.info()).layers).toBeGreaterThan(1);
      } finally {
        await cleanup();
      }
    });

    test('sharded: each fingerprint new exactly once across concurrent callers', async () => {
      const { filter, cleanup } = await make({ capacity: 10_000, errorRate: 0.001, shards: 4 });
      try {
        const fps = randomFingerprints(2000);
        const results = await Promise.all([0, 1, 2, 3].map(() => filter.addIfNew(fps)));
        for (let i = 0; i < fps.length; i += 1) {
          expect(results.filter((r) => r[i]).length).toBe(1);
        }
      } finally {
        await cleanup();
      }
    });

    test('clear empties the filter', async () => {
      const { filter, cleanup } = await make({ capacity: 1000, errorRate: 0.01, shards: 2 });
      try {
        const fps = randomFingerprints(20);
        await filter.addIfNew(fps);
        await filter.clear();
        expect((await filter.mightContain(fps)).some(Boolean)).toBe(false);
      } finally {
        await cleanup();
      }
    });
  });
}
