import { randomBytes } from 'node:crypto';
import { createRedis, deleteByPrefix, probeRedis, type Redis } from '@trawl/redis';
import { beforeEach, describe, expect, it } from 'vitest';
import type { BloomFilter, BloomOptions } from '../bloom.js';
import { hasRedisBloom } from '../redisbloom.js';

export const randomFingerprints = (n: number): Buffer[] => Array.from({ length: n }, () => randomBytes(16));

/**
 * Where tests find a Redis with the RedisBloom module: REDISBLOOM_URL, else the throwaway server
 * `bash .ci/run` starts on port 6380 with the module vendored in test/redisbloom/.
 */
export const TEST_REDISBLOOM_URL = process.env.REDISBLOOM_URL ?? 'redis://127.0.0.1:6380';

/**
 * A connection to the RedisBloom test server and a key namespace of the test file's own.
 * `ready()` throws, naming the URL and how to start the server, when nothing answers there or the
 * server lacks the module: the RedisBloom backend is tested on every run, never skipped.
 */
export function testRedisBloom(label: string): { redis: Redis; prefix: string; ready: () => Promise<void>; cleanup: () => Promise<void> } {
  const redis = createRedis(TEST_REDISBLOOM_URL, { name: `trawl-${label}-redisbloom` });
  redis.on('error', () => undefined);
  const prefix = `t-${label}-rb-${randomBytes(4).toString('hex')}`;
  let reachable = false;
  let checked: Promise<void> | undefined;
  const check = async (): Promise<void> => {
    const howTo = 'start it with `bash .ci/run` (or by hand, see test/redisbloom/README.md), or point REDISBLOOM_URL at a Redis with the module';
    if (!(await probeRedis(TEST_REDISBLOOM_URL, 2000))) {
      redis.disconnect();
      throw new Error(`the RedisBloom test server is missing: nothing answers at ${TEST_REDISBLOOM_URL} (REDISBLOOM_URL); ${howTo}`);
    }
    if (!(await hasRedisBloom(redis))) {
      throw new Error(`the Redis at ${TEST_REDISBLOOM_URL} (REDISBLOOM_URL) has no RedisBloom module (BF.* commands); ${howTo}`);
    }
    reachable = true;
  };
  return {
    redis,
    prefix,
    ready: () => (checked ??= check()),
    async cleanup() {
      if (reachable) await deleteByPrefix(redis, prefix);
      redis.disconnect();
    },
  };
}

/**
 * The contract every Bloom backend meets. `make` returns a fresh, empty filter for the given
 * options (its own key namespace) and a cleanup. `ready` checks the backend's server first; when
 * it throws, every test of the contract fails with its message (a missing backend is a failure,
 * not a skip).
 */
export function bloomContract(
  name: string,
  make: (options: Omit<BloomOptions, 'prefix'>) => Promise<{ filter: BloomFilter; cleanup: () => Promise<void> }>,
  ready: () => Promise<void> = async () => undefined,
): void {
  describe(`Bloom filter contract: ${name}`, () => {
    // Before each test, so each one fails with the reason (a failed beforeAll reports them as skipped).
    beforeEach(ready);

    it('says new once, then maybe-seen', async () => {
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

    it('a fingerprint repeated in one batch is new only once', async () => {
      const { filter, cleanup } = await make({ capacity: 1000, errorRate: 0.01, shards: 1 });
      try {
        const [a, b] = randomFingerprints(2) as [Buffer, Buffer];
        expect(await filter.addIfNew([a, b, a, Buffer.from(a)])).toEqual([true, true, false, false]);
      } finally {
        await cleanup();
      }
    });

    it('prepare creates the filter at full size and adds nothing; on a filter in use it changes nothing', async () => {
      const { filter, cleanup } = await make({ capacity: 200_000, errorRate: 0.01, shards: 2 });
      try {
        await filter.prepare();
        const prepared = await filter.info();
        // ~9.6 bits an item at 1 % (more in the Lua filter's first layer, at half the rate): well
        // over a byte an item, allocated before anything is added.
        expect(prepared.bytes).toBeGreaterThan(200_000);
        expect(prepared.items).toBe(0);
        const fps = randomFingerprints(200);
        expect((await filter.mightContain(fps)).some(Boolean)).toBe(false);
        expect((await filter.addIfNew(fps)).every(Boolean)).toBe(true);
        await filter.prepare();
        expect((await filter.mightContain(fps)).every(Boolean)).toBe(true);
        expect((await filter.info()).items).toBe(200);
      } finally {
        await cleanup();
      }
    });

    it('mightContain does not add', async () => {
      const { filter, cleanup } = await make({ capacity: 1000, errorRate: 0.01, shards: 1 });
      try {
        const fps = randomFingerprints(50);
        expect((await filter.mightContain(fps)).some(Boolean)).toBe(false);
        expect((await filter.addIfNew(fps)).every(Boolean)).toBe(true);
      } finally {
        await cleanup();
      }
    });

    it('keeps its false-positive rate near the target at capacity', async () => {
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

    it('grows past its capacity without losing members or its error bound', async () => {
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

    it('sharded: no fingerprint is new to two concurrent callers, and each is new to one unless it is a false positive', async () => {
      const { filter, cleanup } = await make({ capacity: 10_000, errorRate: 0.001, shards: 4 });
      try {
        const fps = randomFingerprints(2000);
        const results = await Promise.all([0, 1, 2, 3].map(() => filter.addIfNew(fps)));
        const newTo = fps.map((_, i) => results.filter((r) => r[i]).length);
        // Atomic per fingerprint: never new twice.
        expect(Math.max(...newTo)).toBe(1);
        // New to nobody only if the filter already held it: a false positive against the members
        // added before it. Expected well under one here (a fifth of capacity); a lost reply or a
        // script run twice would show as many.
        expect(newTo.filter((n) => n === 0).length).toBeLessThanOrEqual(2);
      } finally {
        await cleanup();
      }
    });

    it('clear empties the filter', async () => {
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
