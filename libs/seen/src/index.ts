export { type BloomBackendName, type BloomFilter, type BloomInfo, type BloomOptions } from './bloom.js';
export { type BloomBackendChoice, createBloomFilter } from './factory.js';
export { LuaBloomFilter } from './lua-bloom.js';
export { hasRedisBloom, RedisBloomFilter } from './redisbloom.js';
export { type ExactStore, SeenSet, type SeenVerdicts } from './seen-set.js';
