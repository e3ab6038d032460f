import { Database } from '@trawl/db';
import { createRedis, deleteByPrefix } from '@trawl/redis';

/**
 * Removes everything a test or benchmark namespace left: its Redis keys and its PostgreSQL
 * schema (on the servers at these URLs).
 */
export async function dropNamespace(namespace: string, servers: { redisUrl: string; databaseUrl: string }): Promise<void> {
  const redis = createRedis(servers.redisUrl);
  try {
    await deleteByPrefix(redis, `${namespace}:`);
  } finally {
    redis.disconnect();
  }
  const db = new Database({ url: servers.databaseUrl, schema: namespace });
  try {
    await db.dropSchema();
  } finally {
    await db.close();
  }
}
