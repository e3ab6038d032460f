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
    const embed = async (name: 'redis' | 'postgres', dir: string): Promise<string> => {
      const { startEmbeddedPostgres, startEmbeddedRedis } = await import('@trawl/embedded');
      const server = name === 'redis' ? await startEmbeddedRedis({ dir }) : await startEmbeddedPostgres({ dir });
      stops.push(() => server.stop());
      embedded.push(name);
      logger.info({ url: server.url }, name === 'redis' ? 'started an embedded redis-server' : 'started an embedded PostgreSQL (PGlite)');
      return server.url;
    };
    let redisUrl = await findRedis(config, local);
    if (!redisUrl) {
      if (!options.allowEmbedded) throw new Error(`REDIS_URL is not set and nothing answers at ${local.redisUrl}`);
      redisUrl = await embed('redis', `${options.dataDir}/redis`);
    }
    let databaseUrl = await findPostgres(config, local);
    if (!databaseUrl) {
      if (!options.allowEmbedded) throw new Error(`DATABASE_URL is not set and nothing answers at ${local.postgresAdminUrl}`);
      databaseUrl = await embed('postgres', `${options.dataDir}/pgdata`);
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
