export { type BloomBackendName, type BloomFilter, type BloomInfo, type BloomOptions } from './bloom.js';
export { type BackendDecision, type BackendFacts, type BloomBackendChoice, decideBackend, type SeenBackend } from './backend-choice.js';
export { createBloomFilter, SEEN_BACKEND_FIELD, settingsKey } from './factory.js';
export { LuaBloomFilter } from './lua-bloom.js';
export { hasRedisBloom, RedisBloomFilter } from './redisbloom.js';
export { type ExactStore, SeenSet, type SeenVerdicts } from './seen-set.js';
export { type LoadResult, SeenSnapshots, type SeenSnapshotOptions, type SnapshotObjects, type TakeResult, type UrlCoverage } from './snapshot.js';
export { mismatch, parseManifest, SNAPSHOT_FORMAT, type SnapshotManifest, type SnapshotTarget } from './snapshot-format.js';
