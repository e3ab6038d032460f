import { type Config, ConfigError, loadConfig } from '@trawl/config';
import { createLogger, type Logger } from '@trawl/telemetry';
import { findServers } from './servers.js';

/**
 * A container entry point: read the configuration (exit 2 naming every bad setting), find the
 * crawl's servers (exit 1 naming the one that does not answer), run until SIGTERM/SIGINT, and
 * exit 0 after `run` has drained — or 1 with its error's message.
 */
export function runMain(
  name: string,
  env: Record<string, string | undefined>,
  run: (config: Readonly<Config>, context: { logger: Logger; redisUrl: string; databaseUrl: string; stopped: Promise<unknown> }) => Promise<unknown>,
): void {
  let config: Readonly<Config>;
  try {
    config = loadConfig({ env });
  } catch (error) {
    process.stderr.write(`${name}: ${(error as Error).message}\n`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  }
  const logger = createLogger({ level: config.log.level, name });
  const stopped = new Promise((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  findServers(config)
    .then((servers) => run(config, { logger, ...servers, stopped }))
    .then(
      (report) => {
        logger.info(report ?? {}, 'exiting');
        logger.flush();
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`${name}: ${(error as Error).message}\n`);
        logger.flush();
        process.exit(error instanceof ConfigError ? 2 : 1);
      },
    );
}
