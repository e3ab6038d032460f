import { isIP } from 'node:net';
import { ConfigError } from '@trawl/config';
import { bearerToken, TokenSet } from '@trawl/core';
import { hostsBlocked, Metrics, type MetricsServer, pipelineEvents, proxyRequests, startMetricsServer } from '@trawl/telemetry';
import { TIMINGS } from '@trawl/model';
import type { Runtime } from './runtime.js';

/** Is `host` a loopback address (or `localhost`)? Only such a listener may run without a token. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1' || bare === '::ffff:127.0.0.1';
}

/**
 * Who may read /metrics: anyone when TRAWL_METRICS_OPEN is true, or when no token is configured
 * and the listener is on loopback; else a Bearer token from TRAWL_API_TOKENS or TRAWL_API_READ_TOKENS. A listener on
 * another address with neither is refused at start.
 */
export function metricsAuthorizer(config: Runtime['config'], host: string): (authorization: string | undefined) => boolean {
  const tokens = new TokenSet([...config.dashboard.apiTokens, ...config.dashboard.readTokens]);
  if (config.metrics.open) return () => true;
  if (tokens.size === 0) {
    if (!isLoopback(host)) {
      throw new ConfigError([`TRAWL_METRICS_HOST (metrics.host): ${host} is not a loopback address, so /metrics needs TRAWL_API_TOKENS, or TRAWL_METRICS_OPEN=true`]);
    }
    return () => true;
  }
  return (authorization) => tokens.verify(bearerToken(authorization)) !== null;
}

/**
 * A worker's or scheduler's metrics: the process metrics and the pipeline's events (from the
 * runtime's counters), served on TRAWL_METRICS_HOST:TRAWL_METRICS_PORT (off when the port is 0).
 * A port already taken (a second process on one machine) costs only this process's listener.
 */
export async function serveProcessMetrics(runtime: Runtime, role: string): Promise<{ metrics: Metrics; server: MetricsServer | null; close(): Promise<void> }> {
  const { config, logger } = runtime;
  const metrics = new Metrics({ role, namespace: config.namespace });
  const events = pipelineEvents(metrics);
  const unsubscribeCounters = runtime.counters.observe((event, by) => events.inc({ event }, by));
  const histograms = new Map(Object.entries(TIMINGS).map(([name, t]) => [name, metrics.histogram(t.metric, t.help, t.buckets)]));
  const unsubscribeTimings = runtime.timings.observe((name, seconds) => histograms.get(name)?.observe(seconds));
  // Only with proxies configured: their names and tiers are the operator's, so the labels are bounded.
  const proxied = config.fetch.proxyUrls.length > 0 ? proxyRequests(metrics) : null;
  const unsubscribeProxies = proxied === null ? () => undefined : runtime.observeProxyRequests((event) => proxied.inc(event));
  const blocked = hostsBlocked(metrics);
  const unsubscribeBlocked = runtime.observeBlockedHosts((event) => blocked.inc({ tier: event.tier, action: event.action }));
  let server: MetricsServer | null = null;
  if (config.metrics.port > 0) {
    const authorize = metricsAuthorizer(config, config.metrics.host);
    server = await startMetricsServer({ host: config.metrics.host, port: config.metrics.port, metrics, authorize, logger }).catch((error: NodeJS.ErrnoException) => {
      logger.warn({ host: config.metrics.host, port: config.metrics.port, code: error.code }, 'metrics listener not started (set TRAWL_METRICS_PORT per process, or 0)');
      return null;
    });
  }
  return {
    metrics,
    server,
    async close() {
      unsubscribeCounters();
      unsubscribeTimings();
      unsubscribeProxies();
      unsubscribeBlocked();
      await server?.close();
    },
  };
}
