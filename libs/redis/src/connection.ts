import { Cluster, type ClusterOptions, Redis as StandaloneRedis, type RedisOptions } from 'ioredis';

/**
 * A connection to trawl's Redis: one server (`Redis`) or a Redis Cluster (`Cluster`, which routes
 * each command to the node owning its key's slot). Everything that talks to Redis takes this
 * type. The two share every command; what differs is spelt out where it matters:
 * - a Lua script or a MULTI/pipeline must touch keys of one slot on a cluster (trawl's
 *   per-partition and per-shard keys carry a hash tag, `{p<n>}` / `{s<n>}`, for that);
 * - SCAN, KEYS, INFO and friends answer for one node: use {@link masterNodes} to visit them all.
 */
export type RedisClient = StandaloneRedis | Cluster;

/** The name the libs have always imported; the same type as {@link RedisClient}. */
export type Redis = RedisClient;

export interface RedisConnectOptions {
  /** Connection name shown by CLIENT LIST, e.g. "trawl:worker:1234". */
  name?: string;
  /**
   * Blocking consumers (BullMQ workers) need `maxRetriesPerRequest: null`; everything else keeps
   * bounded retries so a dead server surfaces as an error instead of a hang — bounded in time, so
   * a Redis restart (a few seconds) is ridden out: commands wait for the reconnection (every
   * 100 ms, backing off to 1 s) for about 15 s before they fail.
   */
  blocking?: boolean;
  /** Coalesce commands issued in the same tick into one pipeline (default true). */
  autoPipelining?: boolean;
  /**
   * Treat `url` as the seed nodes of a Redis Cluster (one URL, or several separated by commas)
   * and open a Cluster client. Without it, `url` names one server.
   */
  cluster?: boolean;
}

/** A cluster seed node and the connection settings that every node shares. */
export interface ClusterSeeds {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  tls: boolean;
}

/**
 * Reads REDIS_URL in cluster mode: one or more `redis://` / `rediss://` URLs separated by
 * commas, naming seed nodes (the client discovers the rest). Credentials and TLS are the
 * cluster's, so every URL must agree on them; a cluster has only database 0.
 */
export function parseClusterUrls(value: string): ClusterSeeds {
  const parts = value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (parts.length === 0) throw new Error('no Redis Cluster seed node given');
  const urls = parts.map((part) => {
    let url: URL;
    try {
      url = new URL(part);
    } catch {
      throw new Error(`not a URL: ${JSON.stringify(part)}`);
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new Error(`expected redis:// or rediss://, got ${JSON.stringify(part)}`);
    if (url.pathname !== '' && url.pathname !== '/' && url.pathname !== '/0') {
      throw new Error(`a Redis Cluster has only database 0, got ${JSON.stringify(part)}`);
    }
    return url;
  });
  const first = urls[0] as URL;
  for (const url of urls) {
    if (url.protocol !== first.protocol || url.username !== first.username || url.password !== first.password) {
      throw new Error('the seed nodes of one cluster must share scheme, user and password');
    }
  }
  return {
    nodes: urls.map((url) => ({ host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 6379) })),
    username: first.username ? decodeURIComponent(first.username) : undefined,
    password: first.password ? decodeURIComponent(first.password) : undefined,
    tls: first.protocol === 'rediss:',
  };
}

/**
 * Opens a connection: to one server, or (with `cluster`) to a Redis Cluster through its seed
 * nodes. `lazyConnect` is off: the first command waits for the connection.
 */
export function createRedis(url: string, options: RedisConnectOptions = {}): RedisClient {
  // Bounded in time, not in tries: commands wait for a reconnection (every 100 ms, backing off to
  // 1 s) for about 15 s, so a Redis restart is ridden out, and then fail.
  const maxRetriesPerRequest = options.blocking ? null : 20;
  const retryStrategy = (times: number) => Math.min(times * 100, 1000);
  if (options.cluster) {
    const seeds = parseClusterUrls(url);
    const clusterOptions: ClusterOptions = {
      enableAutoPipelining: options.autoPipelining ?? true,
      enableReadyCheck: true,
      clusterRetryStrategy: retryStrategy,
      redisOptions: {
        connectionName: options.name,
        maxRetriesPerRequest,
        username: seeds.username,
        password: seeds.password,
        ...(seeds.tls ? { tls: {} } : {}),
      },
    };
    return new Cluster(seeds.nodes, clusterOptions);
  }
  const redisOptions: RedisOptions = {
    connectionName: options.name,
    enableAutoPipelining: options.autoPipelining ?? true,
    maxRetriesPerRequest,
    retryStrategy,
    enableReadyCheck: true,
  };
  return new StandaloneRedis(url, redisOptions);
}

export const isCluster = (redis: RedisClient): redis is Cluster => redis instanceof Cluster;

/** Resolves once the client can take commands (a cluster: once it knows its slots). */
export async function whenReady(redis: RedisClient, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  if (redis.status === 'wait') await redis.connect();
  await new Promise<void>((resolve, reject) => {
    if (redis.status === 'ready') return resolve();
    const timer = setTimeout(() => finish(new Error(`Redis was not ready within ${timeoutMs} ms (status ${redis.status})`)), timeoutMs);
    const onReady = () => finish();
    const onEnd = () => finish(new Error('the Redis connection closed before it was ready'));
    const finish = (error?: Error) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('end', onEnd);
      if (error) reject(error);
      else resolve();
    };
    redis.on('ready', onReady);
    redis.on('end', onEnd);
  });
}

/**
 * The standalone connections that hold the keyspace: the server itself, or every master of a
 * cluster. Per-node commands (SCAN, INFO, DBSIZE, MEMORY STATS) go to each of these.
 */
export async function masterNodes(redis: RedisClient): Promise<StandaloneRedis[]> {
  if (!isCluster(redis)) return [redis];
  await whenReady(redis);
  return redis.nodes('master');
}

/** True when a Redis server (or, with `cluster`, every master of the cluster) answers PING within `timeoutMs`. Never throws. */
export async function probeRedis(url: string, timeoutMs = 500, options: { cluster?: boolean } = {}): Promise<boolean> {
  if (options.cluster) {
    let cluster: Cluster;
    try {
      const seeds = parseClusterUrls(url);
      cluster = new Cluster(seeds.nodes, {
        lazyConnect: true,
        enableOfflineQueue: false,
        clusterRetryStrategy: () => null,
        redisOptions: { connectTimeout: timeoutMs, maxRetriesPerRequest: 0, username: seeds.username, password: seeds.password, ...(seeds.tls ? { tls: {} } : {}) },
      });
    } catch {
      return false;
    }
    cluster.on('error', () => undefined);
    try {
      await Promise.race([cluster.connect(), new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs * 4))]);
      const masters = cluster.nodes('master');
      const replies = await Promise.all(masters.map((node) => node.ping()));
      return masters.length > 0 && replies.every((reply) => reply === 'PONG');
    } catch {
      return false;
    } finally {
      cluster.disconnect();
    }
  }
  let redis: StandaloneRedis;
  try {
    redis = new StandaloneRedis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  } catch {
    return false; // not a URL ioredis can use (e.g. a cluster's seed list without `cluster`)
  }
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** Server time in epoch ms (Redis TIME), for measuring this process's clock offset. */
export async function redisTimeMs(redis: RedisClient): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** SCAN's MATCH pattern for keys starting with `prefix` (glob characters in it taken literally). */
export const prefixPattern = (prefix: string): string => `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;

/**
 * Every key matching `pattern` (SCAN MATCH), in batches, from the server or from each master of
 * a cluster, with the node that holds them. A key may repeat (SCAN's guarantee is at least once).
 */
export async function* scanKeys(redis: RedisClient, pattern: string, count = 1000): AsyncGenerator<{ node: StandaloneRedis; keys: string[] }> {
  for (const node of await masterNodes(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      if (keys.length > 0) yield { node, keys };
    } while (cursor !== '0');
  }
}

/**
 * Deletes every key starting with `prefix` with SCAN + UNLINK in batches (tests and `--fresh`),
 * on every master of a cluster. Returns how many keys were removed.
 */
export async function deleteByPrefix(redis: RedisClient, prefix: string): Promise<number> {
  let removed = 0;
  for await (const { node, keys } of scanKeys(redis, prefixPattern(prefix))) {
    if (node === redis) {
      removed += await node.unlink(...keys);
      continue;
    }
    // The keys one cluster node returns span many slots, and a multi-key UNLINK must stay in
    // one: unlink them one by one, in one pipeline to the node that holds them.
    const pipeline = node.pipeline();
    for (const key of keys) pipeline.unlink(key);
    for (const [error, count] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      removed += Number(count);
    }
  }
  return removed;
}
