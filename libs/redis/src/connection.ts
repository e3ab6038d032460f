import { Redis, type RedisOptions } from 'ioredis';

export type { Redis } from 'ioredis';

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
}

/** Opens a Redis connection. `lazyConnect` is off: the first command waits for the connection. */
export function createRedis(url: string, options: RedisConnectOptions = {}): Redis {
  const redisOptions: RedisOptions = {
    connectionName: options.name,
    enableAutoPipelining: options.autoPipelining ?? true,
    maxRetriesPerRequest: options.blocking ? null : 20,
    retryStrategy: (times) => Math.min(times * 100, 1000),
    enableReadyCheck: true,
  };
  return new Redis(url, redisOptions);
}

/** True when a Redis server answers PING at `url` within `timeoutMs`. Never throws. */
export async function probeRedis(url: string, timeoutMs = 500): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
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
export async function redisTimeMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * Deletes every key matching `prefix*` with SCAN + UNLINK in batches (tests and `--fresh`).
 * Returns how many keys were removed.
 */
export async function deleteByPrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let removed = 0;
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) removed += await redis.unlink(...keys);
  } while (cursor !== '0');
  return removed;
}
