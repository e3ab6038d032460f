import type { Config } from '@trawl/config';
import { Runtime } from '@trawl/runtime';
import type { Logger } from '@trawl/telemetry';
import { type DashboardOptions, startDashboard } from './server.js';

/** A dashboard process from start to SIGTERM: open the crawl's servers, serve until `stopped`, close. */
export async function runDashboardProcess(
  config: Readonly<Config>,
  options: { logger: Logger; redisUrl: string; databaseUrl: string; stopped: Promise<unknown>; onListening?: (url: string) => void } & DashboardOptions,
): Promise<{ url: string }> {
  const runtime = await Runtime.open({ config, redisUrl: options.redisUrl, databaseUrl: options.databaseUrl, logger: options.logger, role: 'dashboard' });
  try {
    const server = await startDashboard(runtime, { host: options.host, port: options.port });
    options.onListening?.(server.url);
    await options.stopped;
    options.logger.info('stopping the dashboard');
    await server.close();
    return { url: server.url };
  } finally {
    await runtime.close();
  }
}
