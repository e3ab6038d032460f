export {
  type ClusterSeeds,
  createRedis,
  deleteByPrefix,
  isCluster,
  masterNodes,
  parseClusterUrls,
  prefixPattern,
  probeRedis,
  type Redis,
  type RedisClient,
  type RedisConnectOptions,
  redisTimeMs,
  scanKeys,
  whenReady,
} from './connection.js';
export { bindScripts, loadScript, loadScripts, type ScriptCaller, type ScriptDefinition } from './scripts.js';
