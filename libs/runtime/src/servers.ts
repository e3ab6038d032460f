import { type Config, redactUrlPasswords } from '@trawl/config';
import { ErrorCode, TrawlError } from '@trawl/core';
import { ensureDatabase, probePostgres } from '@trawl/db';
import { probeRedis } from '@trawl/redis';

export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';
export const LOCAL_POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
export const LOCAL_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/trawl';

export interface LocalServers {
  redisUrl: string;
  postgresAdminUrl: string;
  postgresUrl: string;
}
export const LOCAL_SERVERS: LocalServers = { redisUrl: LOCAL_REDIS_URL, postgresAdminUrl: LOCAL_POSTGRES_ADMIN_URL, postgresUrl: LOCAL_POSTGRES_URL };

/** Hides a password in a connection URL, for messages and logs. */
export const redactUrl = (url: string): string => redactUrlPasswords(url);

const unreachable = (message: string) => new TrawlError(ErrorCode.ServerUnreachable, message, { action: 'fatal' });

/**
 * The Redis server to use: `REDIS_URL` when set (it must answer), else the local one on
 * 127.0.0.1:6379 if it answers; null when neither (the CLI may then start an embedded one).
 */
export async function findRedis(config: Readonly<Config>, local: LocalServers = LOCAL_SERVERS): Promise<string | null> {
  if (config.redisUrl) {
    if (!(await probeRedis(config.redisUrl, 2000, { cluster: config.redisCluster }))) throw unreachable(`Redis at ${redactUrl(config.redisUrl)} (REDIS_URL) does not answer: start it, or point REDIS_URL at a running server.`);
    return config.redisUrl;
  }
  return (await probeRedis(local.redisUrl)) ? local.redisUrl : null;
}

/**
 * The PostgreSQL server to use: `DATABASE_URL` when set (it must answer), else the local one on
 * 127.0.0.1:5432 (database `trawl`, created if missing) if it answers; null when neither.
 */
export async function findPostgres(config: Readonly<Config>, local: LocalServers = LOCAL_SERVERS): Promise<string | null> {
  if (config.databaseUrl) {
    if (!(await probePostgres(config.databaseUrl, 3000))) throw unreachable(`PostgreSQL at ${redactUrl(config.databaseUrl)} (DATABASE_URL) does not answer: start it, or point DATABASE_URL at a running server.`);
    return config.databaseUrl;
  }
  if (!(await probePostgres(local.postgresAdminUrl))) return null;
  await ensureDatabase(local.postgresAdminUrl, new URL(local.postgresUrl).pathname.slice(1));
  return local.postgresUrl;
}

/** Both servers, for processes that join a shared crawl (workers, schedulers, dashboards): never embedded. */
export async function findServers(config: Readonly<Config>, local: LocalServers = LOCAL_SERVERS): Promise<{ redisUrl: string; databaseUrl: string }> {
  const redisUrl = await findRedis(config, local);
  if (!redisUrl) throw unreachable(`Redis: REDIS_URL is not set and nothing answers at ${local.redisUrl}; set REDIS_URL to the crawl's Redis server.`);
  const databaseUrl = await findPostgres(config, local);
  if (!databaseUrl) throw unreachable(`PostgreSQL: DATABASE_URL is not set and nothing answers at ${local.postgresAdminUrl}; set DATABASE_URL to the crawl's PostgreSQL server.`);
  return { redisUrl, databaseUrl };
}
