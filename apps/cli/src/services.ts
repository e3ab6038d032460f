import type { Config } from '@trawl/config';
import { findPostgres, findRedis, LOCAL_SERVERS, type LocalServers } from '@trawl/runtime';
import type { Logger } from '@trawl/telemetry';

export interface Services {
  redisUrl: string;
  databaseUrl: string;
  /** Which servers this process started ("redis", "postgres"). */
  embedded: string[];
  stop(): Promise<void>;
}

/**
 * Finds the servers a CLI command uses: REDIS_URL / DATABASE_URL when set; else local servers
 * on their standard ports if they answer; else (only where `allowEmbedded`: `trawl crawl` and
 * `trawl demo`) a private redis-server child and PGlite with their data under `dataDir`. The
 * embedded servers are loaded only then, so no other process ever loads them.
 */
export async function resolveServices(
  config: Readonly<Config>,
  options: {
    dataDir: string;
    logger: Logger;
    allowEmbedded: boolean;
    /** Where to look for local servers (tests point these at closed ports). */
    local?: LocalServers;
  },
): Promise<Services> {
  const local = options.local ?? LOCAL_SERVERS;
  const stops: (() => Promise<void>)[] = [];
  const embedded: string[] = [];
  const { logger } = options;
  try {
    let redisUrl = await findRedis(config, local);
    if (!redisUrl) {
      if (!options.allowEmbedded) throw new Error(`REDIS_URL is not set and nothing answers at ${local.redisUrl}`);
      const { startEmbeddedRedis } = await import('@trawl/embedded');
      const server = await startEmbeddedRedis({ dir: `${options.dataDir}/redis` });
      stops.push(() => server.stop());
      embedded.push('redis');
      redisUrl = server.url;
      logger.info({ url: redisUrl }, 'started an embedded redis-server');
    }
    let databaseUrl = await findPostgres(config, local);
    if (!databaseUrl) {
      if (!options.allowEmbedded) throw new Error(`DATABASE_URL is not set and nothing answers at ${local.postgresAdminUrl}`);
      const { startEmbeddedPostgres } = await import('@trawl/embedded');
      const server = await startEmbeddedPostgres({ dir: `${options.dataDir}/pgdata` });
      stops.push(() => server.stop());
      embedded.push('postgres');
      databaseUrl = server.url;
      logger.info({ url: databaseUrl }, 'started an embedded PostgreSQL (PGlite)');
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
