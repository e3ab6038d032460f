import { testRedis } from '@trawl/redis/testing';
import { afterAll } from 'vitest';
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
