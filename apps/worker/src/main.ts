#!/usr/bin/env node
// Container entry point of a fetch worker: the same process as `trawl worker`.
import { ConfigError, loadConfig } from '@trawl/config';
import { runWorkerProcess } from '@trawl/crawl';
import { createLogger } from '@trawl/telemetry';

let config;
try {
  config = loadConfig({ env: process.env });
} catch (error) {
  process.stderr.write(`trawl-worker: ${(error as Error).message}\n`);
  process.exit(error instanceof ConfigError ? 2 : 1);
}
const logger = createLogger({ level: config.log.level, name: 'worker' });
const stopped = new Promise((resolve) => {
  process.once('SIGTERM', resolve);
  process.once('SIGINT', resolve);
});
runWorkerProcess(config, { logger, dataDir: '.trawl', stopped }).then(
  (report) => {
    logger.info(report, 'exiting');
    logger.flush();
    process.exit(0);
  },
  (error: unknown) => {
    logger.fatal({ err: error }, 'worker failed');
    logger.flush();
    process.exit(1);
  },
);
