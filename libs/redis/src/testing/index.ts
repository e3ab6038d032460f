import { randomUUID } from 'node:crypto';
import { createRedis, deleteByPrefix, type Redis } from '../connection.js';

/** Where tests find Redis: REDIS_URL, else the standard local port. */
export const TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestRedis {
  redis: Redis;
  /** A namespace of this test file's own; every key it creates starts with it. */
  prefix: string;
  /** Removes the namespace's keys and closes the connection. */
  cleanup(): Promise<void>;
}

/** A connection and a fresh key namespace, so test files never collide. */
export function testRedis(label = 'test'): TestRedis {
  const redis = createRedis(TEST_REDIS_URL, { name: `trawl-${label}` });
  const prefix = `t-${label}-${randomUUID().slice(0, 8)}`;
  return {
    redis,
    prefix,
    async cleanup() {
      await deleteByPrefix(redis, prefix);
      redis.disconnect();
    },
  };
}
