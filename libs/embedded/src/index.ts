export { type DataDirLock, lockDataDir } from './lock.js';
export { freePort } from './net.js';
export { type ParentDeathMethod, spawnTiedToParent } from './parent-death.js';
export { startEmbeddedPostgres } from './postgres.js';
export { type EmbeddedRedisOptions, hasRedisServer, startEmbeddedRedis } from './redis.js';
export type { EmbeddedServer } from './server.js';
export { missingRedisMessage } from './redis.js';
