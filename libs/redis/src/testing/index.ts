import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { createRedis, deleteByPrefix, type RedisClient, type RedisConnectOptions } from '../connection.js';

export { type ClusterNodeInfo, startTestCluster, type TestCluster } from './cluster.js';

/** The cluster the `redis-cluster` test project's global setup provides to its test files. */
function providedCluster(): string | undefined {
  try {
    return inject('trawlTestRedisCluster') || undefined;
  } catch {
    return undefined; // not inside a vitest test file
  }
}

/**
 * Seed nodes of a Redis Cluster to run the tests against instead of one server: the
 * `redis-cluster` test project's cluster (so the same test files run once against a server and
 * once against a cluster), or TRAWL_TEST_REDIS_CLUSTER to point every test at a cluster of yours.
 */
export const TEST_REDIS_CLUSTER_URL: string | undefined = process.env.TRAWL_TEST_REDIS_CLUSTER || providedCluster();
/** Where tests find Redis: the test cluster when there is one, else REDIS_URL, else the standard local port. */
export const TEST_REDIS_URL = TEST_REDIS_CLUSTER_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TEST_REDIS_IS_CLUSTER = TEST_REDIS_CLUSTER_URL !== undefined;

/** A new connection to the test Redis (server or cluster, see {@link TEST_REDIS_URL}). */
export function testConnection(options: Omit<RedisConnectOptions, 'cluster'> = {}): RedisClient {
  return createRedis(TEST_REDIS_URL, { ...options, cluster: TEST_REDIS_IS_CLUSTER });
}

export interface TestRedis {
  redis: RedisClient;
  /** A namespace of this test file's own; every key it creates starts with it. */
  prefix: string;
  /** Removes the namespace's keys and closes the connection. */
  cleanup(): Promise<void>;
}

/** A connection and a fresh key namespace, so test files never collide. */
export function testRedis(label = 'test'): TestRedis {
  const redis = testConnection({ name: `trawl-${label}` });
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
