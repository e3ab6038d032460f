export { createRedis, deleteByPrefix, probeRedis, type Redis, type RedisConnectOptions, redisTimeMs } from './connection.js';
export { bindScripts, loadScript, loadScripts, type ScriptCaller, type ScriptDefinition } from './scripts.js';
