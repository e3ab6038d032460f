#!/usr/bin/env node
// Container entry point of a scheduler: the same process as `trawl scheduler`.
import { ConfigError, loadConfig } from '@trawl/config';
import { findServers } from '@trawl/runtime';
import { createLogger } from '@trawl/telemetry';
import { runSchedulerProcess } from './scheduler-process.js';

let config;
try {
  config = loadConfig({ env: process.env });
} catch (error) {
  process.stderr.write(`trawl-scheduler: ${(error as Error).message}\n`);
  process.exit(error instanceof ConfigError ? 2 : 1);
}
const logger = createLogger({ level: config.log.level, name: 'scheduler' });
const stopped = new Promise((resolve) => {
  process.once('SIGTERM', resolve);
  process.once('SIGINT', resolve);
});
findServers(config)
  .then((servers) => runSchedulerProcess(config, { logger, ...servers, stopped }))
  .then(
    (report) => {
      logger.info(report, 'exiting');
      logger.flush();
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`trawl-scheduler: ${(error as Error).message}\n`);
      logger.flush();
      process.exit(error instanceof ConfigError ? 2 : 1);
    },
  );
