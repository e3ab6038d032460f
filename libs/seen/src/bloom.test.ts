import { testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { LuaBloomFilter } from './lua-bloom.js';
import { RedisBloomFilter } from './redisbloom.js';
import { bloomContract, testRedisBloom } from './testing/index.js';

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
