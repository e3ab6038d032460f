import { ConfigError } from '@trawl/config';
import { createRedis, type Redis } from '@trawl/redis';
import { testRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { BloomBackendChoice } from './backend-choice.js';
import { createBloomFilter, SEEN_BACKEND_FIELD, settingsKey } from './factory.js';
import { LuaBloomFilter } from './lua-bloom.js';
import { randomFingerprints, TEST_REDISBLOOM_URL, testRedisBloom } from './testing/index.js';

// Real servers: the standard one has no modules, the RedisBloom test server has BF.*.
const plain = testRedis('seenfactory');
const rb = testRedisBloom('seenfactory');
beforeEach(rb.ready);
afterAll(async () => {
  await plain.cleanup();
  await rb.cleanup();
});
let n = 0;
/** A fresh namespace under a test prefix. */
const namespace = (base: string) => `${base}:ns${(n += 1)}`;
const options = (prefix: string) => ({ prefix, capacity: 1000, errorRate: 0.01, shards: 1 });
const open = (redis: Redis, prefix: string, choice: BloomBackendChoice) => createBloomFilter(redis, options(prefix), choice);

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems.join('\n');
}

describe('createBloomFilter records the backend once per namespace', () => {
  it('auto picks RedisBloom where the module is, records it, and later processes follow', async () => {
    const prefix = namespace(rb.prefix);
    expect((await open(rb.redis, prefix, 'auto')).backend).toBe('redisbloom');
    expect(await rb.redis.hget(settingsKey(prefix), SEEN_BACKEND_FIELD)).toBe('redisbloom');
    expect((await open(rb.redis, prefix, 'auto')).backend).toBe('redisbloom');
    expect((await open(rb.redis, prefix, 'redisbloom')).backend).toBe('redisbloom');
    expect(await refusal(open(rb.redis, prefix, 'lua'))).toMatch(/^TRAWL_SEEN_BACKEND=lua, but this crawl's seen-set uses redisbloom \(recorded in .*:settings\)/);
  });

  it('auto picks the Lua filter without the module; an explicit redisbloom is refused', async () => {
    const prefix = namespace(plain.prefix);
    expect((await open(plain.redis, prefix, 'auto')).backend).toBe('lua-bitmap');
    expect(await plain.redis.hget(settingsKey(prefix), SEEN_BACKEND_FIELD)).toBe('lua');
    expect(await refusal(open(plain.redis, prefix, 'redisbloom'))).toMatch(/^TRAWL_SEEN_BACKEND=redisbloom, but this crawl's seen-set uses lua/);
    expect(await refusal(open(plain.redis, namespace(plain.prefix), 'redisbloom'))).toMatch(/no RedisBloom module/);
  });

  it('a crawl recorded as lua stays lua on a server that has the module', async () => {
    const prefix = namespace(rb.prefix);
    expect((await open(rb.redis, prefix, 'lua')).backend).toBe('lua-bitmap');
    expect((await open(rb.redis, prefix, 'auto')).backend).toBe('lua-bitmap');
  });

  it('a crawl whose filter predates the record keeps its backend, and the choice is recorded then', async () => {
    const prefix = namespace(rb.prefix);
    const legacy = new LuaBloomFilter(rb.redis, options(prefix));
    await legacy.addIfNew(randomFingerprints(10));
    expect((await open(rb.redis, prefix, 'auto')).backend).toBe('lua-bitmap');
    expect(await rb.redis.hget(settingsKey(prefix), SEEN_BACKEND_FIELD)).toBe('lua');
  });

  it('refuses a crawl recorded as redisbloom on a server without the module', async () => {
    const prefix = namespace(plain.prefix);
    await plain.redis.hset(settingsKey(prefix), SEEN_BACKEND_FIELD, 'redisbloom');
    expect(await refusal(open(plain.redis, prefix, 'auto'))).toMatch(/uses redisbloom .* but the Redis server has no RedisBloom module/);
  });

  it('racing first processes with different explicit choices: one wins, the other is refused', async () => {
    const prefix = namespace(rb.prefix);
    const [a, b] = [createRedis(TEST_REDISBLOOM_URL), createRedis(TEST_REDISBLOOM_URL)];
    const results = await Promise.allSettled([open(a, prefix, 'lua'), open(b, prefix, 'redisbloom')]);
    a.disconnect();
    b.disconnect();
    const recorded = await rb.redis.hget(settingsKey(prefix), SEEN_BACKEND_FIELD);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const winner = results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ backend: string }>;
    expect(winner.value.backend).toBe(recorded === 'lua' ? 'lua-bitmap' : 'redisbloom');
    const loser = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(loser.reason).toBeInstanceOf(ConfigError);
  });
});
