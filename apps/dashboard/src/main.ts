#!/usr/bin/env node
// Skeleton: validates the configuration and exits. The dashboard (bull-board, the REST API, pages) arrives with
// its own issue; the entry point exists now so deployments and the layout are in place.
import { ConfigError, loadConfig } from '@trawl/config';
import { createLogger } from '@trawl/telemetry';

try {
  const config = loadConfig({ env: process.env });
  const logger = createLogger({ level: config.log.level, name: 'dashboard' });
  logger.warn({ namespace: config.namespace }, 'the dashboard is a skeleton in this release: nothing to run yet');
  logger.flush();
} catch (error) {
  process.stderr.write(`trawl-dashboard: ${(error as Error).message}\n`);
  process.exit(error instanceof ConfigError ? 2 : 1);
}
