import type { Config } from '@trawl/config';
import { ensureDatabase, probePostgres } from '@trawl/db';
import { startEmbeddedPostgres, startEmbeddedRedis } from '@trawl/embedded';
import { probeRedis } from '@trawl/redis';
import type { Logger } from '@trawl/telemetry';

export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';
export const LOCAL_POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
export const LOCAL_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/trawl';

export interface Services {
  redisUrl: string;
  databaseUrl: string;
  /** Which servers this process started ("redis", "postgres"). */
  embedded: string[];
  stop(): Promise<void>;
}

/**
 * Finds the servers a process uses: REDIS_URL / DATABASE_URL when set; else local servers on
 * their standard ports if they answer; else (only where `allowEmbedded`) a private redis-server
 * child and PGlite with their data under `dataDir`.
 */
export async function resolveServices(
  config: Readonly<Config>,
  options: {
    dataDir: string;
    logger: Logger;
    allowEmbedded: boolean;
    /** Where to look for local servers (tests point these at closed ports). */
    local?: { redisUrl: string; postgresAdminUrl: string; postgresUrl: string };
  },
): Promise<Services> {
  const local = options.local ?? { redisUrl: LOCAL_REDIS_URL, postgresAdminUrl: LOCAL_POSTGRES_ADMIN_URL, postgresUrl: LOCAL_POSTGRES_URL };
  const stops: (() => Promise<void>)[] = [];
  const embedded: string[] = [];
  const { logger } = options;
  try {
    let redisUrl = config.redisUrl;
    if (!redisUrl) {
      if (await probeRedis(local.redisUrl)) redisUrl = local.redisUrl;
      else if (options.allowEmbedded) {
        const server = await startEmbeddedRedis({ dir: `${options.dataDir}/redis` });
        stops.push(() => server.stop());
        embedded.push('redis');
        redisUrl = server.url;
        logger.info({ url: redisUrl }, 'started an embedded redis-server');
      } else {
        throw new Error(`REDIS_URL is not set and nothing answers at ${local.redisUrl}`);
      }
    }

    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      if (await probePostgres(local.postgresAdminUrl)) {
        await ensureDatabase(local.postgresAdminUrl, new URL(local.postgresUrl).pathname.slice(1));
        databaseUrl = local.postgresUrl;
      } else if (options.allowEmbedded) {
        const server = await startEmbeddedPostgres({ dir: `${options.dataDir}/pgdata` });
        stops.push(() => server.stop());
        embedded.push('postgres');
        databaseUrl = server.url;
        logger.info({ url: databaseUrl }, 'started an embedded PostgreSQL (PGlite)');
      } else {
        throw new Error(`DATABASE_URL is not set and nothing answers at ${local.postgresAdminUrl}`);
      }
    }
    return {
      redisUrl,
      databaseUrl,
      embedded,
      async stop() {
        for (const stop of stops.reverse()) await stop().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}
