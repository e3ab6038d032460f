import { ConfigError } from '@trawl/config';
import type { RedisClient as Redis } from '@trawl/redis';
import { type BloomFilter, type BloomOptions, bloomKeyBase } from './bloom.js';
import { type BloomBackendChoice, decideBackend, type SeenBackend } from './backend-choice.js';
import { LuaBloomFilter } from './lua-bloom.js';
import { hasRedisBloom, RedisBloomFilter } from './redisbloom.js';

/** The namespace's settings hash: choices made once per crawl that every process must share. */
export const settingsKey = (prefix: string): string => `${prefix}:settings`;
/** Field of the settings hash holding the seen-set backend ("redisbloom" or "lua"). */
export const SEEN_BACKEND_FIELD = 'seen';

const isBackend = (value: string | null): value is SeenBackend => value === 'redisbloom' || value === 'lua';

/** Which backend's keys already exist for this namespace (shard 0 is enough: every shard gets keys). */
async function foundBackend(redis: Redis, prefix: string): Promise<SeenBackend | null> {
  const base = bloomKeyBase(prefix, 0);
  const [bf, meta] = await Promise.all([redis.exists(`${base}bf`), redis.exists(`${base}meta`)]);
  if (bf > 0) return 'redisbloom';
  if (meta > 0) return 'lua';
  return null;
}

/**
 * Builds the namespace's Bloom filter on the backend the crawl uses. The first process decides
 * and records its decision in `<prefix>:settings` (HSETNX, so racing first processes agree);
 * every later process follows the record. Throws a ConfigError (the process stops, naming
 * TRAWL_SEEN_BACKEND) when `choice` contradicts the record or the server lacks the module. The
 * filter's `backend` says what was chosen.
 */
export async function createBloomFilter(redis: Redis, options: BloomOptions, choice: BloomBackendChoice): Promise<BloomFilter> {
  const key = settingsKey(options.prefix);
  const moduleAvailable = await hasRedisBloom(redis);
  for (let round = 0; round < 3; round += 1) {
    const recorded = await redis.hget(key, SEEN_BACKEND_FIELD);
    if (recorded !== null && !isBackend(recorded)) {
      throw new ConfigError([`TRAWL_SEEN_BACKEND: ${key} records an unknown seen-set backend ${JSON.stringify(recorded)}`]);
    }
    const found = recorded === null ? await foundBackend(redis, options.prefix) : null;
    const decision = decideBackend({ choice, recorded, found, moduleAvailable, settingsKey: key });
    if ('problem' in decision) throw new ConfigError([decision.problem]);
    // Lost a race with another first process: follow what it recorded.
    if (decision.record && (await redis.hsetnx(key, SEEN_BACKEND_FIELD, decision.backend)) === 0) continue;
    return decision.backend === 'redisbloom' ? new RedisBloomFilter(redis, options) : new LuaBloomFilter(redis, options);
  }
  throw new Error(`${key}: the seen-set backend record keeps changing`);
}
