import { testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { LuaBloomFilter } from './lua-bloom.js';
import { RedisBloomFilter } from './redisbloom.js';
import { bloomKeyBase } from './bloom.js';
import { bloomContract, randomFingerprints, testRedisBloom } from './testing/index.js';

// Both backends, every run. The Lua bitmap filter runs on the standard test server (no modules);
// RedisBloom on the RedisBloom test server (REDISBLOOM_URL), and fails loudly when it is missing.
const t = testRedis('seen');
const rb = testRedisBloom('seen');
afterAll(async () => {
  await t.cleanup();
  await rb.cleanup();
});
let n = 0;

bloomContract('lua-bitmap', async (options) => {
  const filter = new LuaBloomFilter(t.redis, { ...options, prefix: `${t.prefix}:${(n += 1)}` });
  return { filter, cleanup: () => filter.clear() };
});

bloomContract(
  'redisbloom',
  async (options) => {
    const filter = new RedisBloomFilter(rb.redis, { ...options, prefix: `${rb.prefix}:${(n += 1)}` });
    return { filter, cleanup: () => filter.clear() };
  },
  rb.ready,
);

describe('RedisBloom after a wipe', () => {
  it('creates a shard whose key went with the data again with its own capacity and error rate, not RedisBloom\'s defaults', async () => {
    await rb.ready();
    const fp = (text: string) => Buffer.from(text.padEnd(16, '.'));
    const filter = new RedisBloomFilter(rb.redis, { prefix: `${rb.prefix}:wiped`, capacity: 5000, errorRate: 0.001, shards: 1 });
    const key = (await rb.redis.keys(`${rb.prefix}:wiped*`))[0];
    expect(key).toBeUndefined();
    expect(await filter.addIfNew([fp('a'), fp('b')])).toEqual([true, true]);
    // The data is lost under the filter's feet (a FLUSHALL, a restart without persistence).
    await rb.redis.unlink(...(await rb.redis.keys(`${rb.prefix}:wiped*`)));
    expect(await filter.mightContain([fp('a')])).toEqual([false]);
    expect(await rb.redis.keys(`${rb.prefix}:wiped*`)).toEqual([]);
    expect(await filter.addIfNew([fp('a')])).toEqual([true]);
    const [created] = await rb.redis.keys(`${rb.prefix}:wiped*`);
    const raw = (await rb.redis.call('BF.INFO', created as string)) as (string | number)[];
    const info = new Map<string, number>();
    for (let i = 0; i + 1 < raw.length; i += 2) info.set(String(raw[i]).toLowerCase(), Number(raw[i + 1]));
    expect(info.get('capacity')).toBe(5000);
    expect(info.get('expansion rate')).toBe(2);
    await filter.clear();
  });
});

describe('Lua bitmap filter, one batch larger than its newest layer', () => {
  it('seals each layer at its capacity mid-batch and still holds every member', async () => {
    const prefix = `${t.prefix}:big-batch`;
    const filter = new LuaBloomFilter(t.redis, { prefix, capacity: 100, errorRate: 0.01, shards: 1 });
    try {
      const members = randomFingerprints(1000);
      const added = await filter.addIfNew(members);
      // New unless a false positive against the members before it (well under 2 % here).
      expect(added.filter(Boolean).length).toBeGreaterThan(980);
      expect((await filter.mightContain(members)).every(Boolean)).toBe(true);
      const meta = await t.redis.hgetall(`${bloomKeyBase(prefix, 0)}meta`);
      const layers = Number(meta.layers);
      expect(layers).toBeGreaterThanOrEqual(4); // 100 + 200 + 400 < 980
      for (let i = 0; i < layers; i += 1) expect(Number(meta[`n${i}`])).toBeLessThanOrEqual(Number(meta[`c${i}`]));
      for (let i = 0; i < layers - 1; i += 1) expect(Number(meta[`n${i}`])).toBe(Number(meta[`c${i}`]));
    } finally {
      await filter.clear();
    }
  });
});
