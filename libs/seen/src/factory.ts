import type { RedisClient } from '@trawl/redis';
import type { BloomFilter, BloomOptions } from './bloom.js';
import { LuaBloomFilter } from './lua-bloom.js';
import { hasRedisBloom, RedisBloomFilter } from './redisbloom.js';

export type BloomBackendChoice = 'auto' | 'redisbloom' | 'lua';

/**
 * Picks the Bloom backend: RedisBloom when asked for (an error if the server lacks it) or when
 * `auto` finds the module; the Lua bitmap filter otherwise. Every process of one crawl must
 * make the same choice, so `auto` is only for a namespace whose filter does not exist yet… in
 * practice all processes talk to the same server and detect the same thing.
 */
export async function createBloomFilter(redis: RedisClient, options: BloomOptions, choice: BloomBackendChoice): Promise<BloomFilter> {
  if (choice === 'lua') return new LuaBloomFilter(redis, options);
  const available = await hasRedisBloom(redis);
  if (choice === 'redisbloom' && !available) {
    throw new Error('TRAWL_SEEN_BACKEND=redisbloom but the Redis server has no RedisBloom module (BF.* commands)');
  }
  return available ? new RedisBloomFilter(redis, options) : new LuaBloomFilter(redis, options);
}
