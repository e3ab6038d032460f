import { createRedis } from '@trawl/redis';
import { testConnection, testRedis } from '@trawl/redis/testing';
import { afterAll } from 'vitest';
import { LuaBloomFilter } from './lua-bloom.js';
import { hasRedisBloom, RedisBloomFilter } from './redisbloom.js';
import { bloomContract } from './testing/index.js';

const t = testRedis('seen');
afterAll(() => t.cleanup());
let n = 0;

bloomContract('lua-bitmap', async (options) => {
  const filter = new LuaBloomFilter(t.redis, { ...options, prefix: `${t.prefix}:${(n += 1)}` });
  return { filter, cleanup: () => filter.clear() };
});

// Set TRAWL_TEST_REDISBLOOM_URL to a server with the module (redis-stack, Redis 8) to run this
// contract there; by default it runs against the test server and reports when the module is absent.
const bloomUrl = process.env.TRAWL_TEST_REDISBLOOM_URL;
const bloomRedis = bloomUrl ? createRedis(bloomUrl, { name: 'trawl-seen-redisbloom' }) : testConnection({ name: 'trawl-seen-redisbloom' });
afterAll(() => bloomRedis.disconnect());
bloomContract(
  'redisbloom',
  async (options) => {
    const filter = new RedisBloomFilter(bloomRedis, { ...options, prefix: `${t.prefix}:rb${(n += 1)}` });
    return { filter, cleanup: () => filter.clear() };
  },
  () => hasRedisBloom(bloomRedis),
);
