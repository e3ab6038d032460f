import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from 'pino';

export type { Counter, Gauge, Histogram } from 'prom-client';

/**
 * One process's Prometheus registry: the default process metrics (CPU, memory, event loop, GC)
 * and trawl's own series, every one labelled with the crawl's namespace and the process's role.
 * Label values must be bounded: never a URL, and a host only for a configured top-N.
 */
export class Metrics {
  readonly registry = new Registry();

  constructor(options: { role: string; namespace: string; defaultMetrics?: boolean }) {
    this.registry.setDefaultLabels({ namespace: options.namespace, role: options.role });
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    return new Histogram({ name, help, buckets: [...buckets], registers: [this.registry] });
  }

  /** A gauge; `collect` runs at every scrape (set its values there). */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (gauge: Gauge<L>) => void | Promise<void>): Gauge<L> {
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect ? { async collect(this: Gauge<L>) { await collect(this); } } : {}),
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** What the seed admission series show (the frontier's `AdmissionStatus`, structurally). */
export interface AdmissionReading {
  state: 'admitting' | 'paused';
  queued: number;
  maxQueued: number;
  resumeBelow: number;
}

/**
 * Seed admission: `trawl_seed_admission_paused` (1 while seeds wait because the frontier holds
 * TRAWL_FRONTIER_MAX_QUEUED URLs or more), `trawl_frontier_max_queued` (the threshold, 0 for
 * none) and `trawl_frontier_resume_below` (the resume mark). `read` gives the latest decision, or
 * undefined before the first (the series read 0 then: a gauge without labels always has a value).
 */
export function admissionMetrics(metrics: Metrics, read: () => AdmissionReading | undefined | Promise<AdmissionReading | undefined>): void {
  const series: [string, string, (r: AdmissionReading) => number][] = [
    ['trawl_seed_admission_paused', '1 while seed injection is paused: the frontier holds TRAWL_FRONTIER_MAX_QUEUED queued URLs or more (seeds wait in the seeds queue; the seeds API answers 429); 0 while seeds are admitted.', (r) => (r.state === 'paused' ? 1 : 0)],
    ['trawl_frontier_max_queued', 'The seed admission threshold on queued URLs (TRAWL_FRONTIER_MAX_QUEUED; 0: no limit).', (r) => r.maxQueued],
    ['trawl_frontier_resume_below', 'Seed admission resumes once the frontier holds fewer queued URLs than this (90 % of the threshold).', (r) => r.resumeBelow],
  ];
  for (const [name, help, value] of series) {
    metrics.gauge(name, help, [], async (gauge) => {
      const reading = await read();
      gauge.reset();
      if (reading) gauge.set(value(reading));
    });
  }
}

/**
 * The pipeline's per-process event counter, `trawl_pipeline_events_total{event}`: one series per
 * counter name (fetched, status2xx, retries, dead, …), fed by the crawl's in-process counters.
 */
export function pipelineEvents(metrics: Metrics): Counter<'event'> {
  return metrics.counter('trawl_pipeline_events_total', 'Events of the fetch pipeline in this process (fetched, status2xx…5xx, fetchErrors, retries, dead, …).', ['event']);
}

/**
 * Requests the fetcher routed through its proxy tiers, `trawl_proxy_requests_total{tier, proxy,
 * outcome}`: `proxy` is the proxy's configured name (`none`: direct, '' when the tier had none
 * left), `outcome` ok, error (the site's failure), proxy-failed (the proxy's: the request went on
 * to the next member) or unavailable. Every label value comes from the configuration: bounded.
 */
export function proxyRequests(metrics: Metrics): Counter<'tier' | 'proxy' | 'outcome'> {
  return metrics.counter('trawl_proxy_requests_total', 'Requests through the fetcher\'s proxy tiers, by tier, proxy (none: direct) and outcome (ok, error, proxy-failed, unavailable).', ['tier', 'proxy', 'outcome']);
}

/**
 * Hosts judged blocked (refusing the crawler, not slow), by the tier that refused them (`none`:
 * direct) and what was done: `escalated` (moved up a proxy tier) or `paused` (no tier left).
 * Tier names come from the configuration: bounded.
 */
export function hostsBlocked(metrics: Metrics): Counter<'tier' | 'action'> {
  return metrics.counter('trawl_host_blocked_total', 'Hosts judged blocked (refusing the crawler), by the proxy tier that refused them (none: direct) and action (escalated: moved up a tier; paused: no tier left).', ['tier', 'action']);
}

export interface MetricsServerOptions {
  host: string;
  port: number;
  metrics: Metrics;
  /** Whether a /metrics request may be answered (its Authorization header); /healthz is always open. */
  authorize: (authorization: string | undefined) => boolean;
  logger: Logger;
}

export interface MetricsServer {
  /** The port actually bound (when asked for 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * A small HTTP listener for processes without a web server of their own (workers, schedulers):
 * `GET /metrics` (Prometheus text) and `GET /healthz`. Nothing else.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const server: Server = createServer((req: IncomingMessage, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('ok\n');
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    if (!options.authorize(req.headers.authorization)) {
      res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8', 'www-authenticate': 'Bearer realm="trawl"' }).end('unauthorized\n');
      return;
    }
    options.metrics.text().then(
      (body) => res.writeHead(200, { 'content-type': options.metrics.contentType }).end(body),
      (error: unknown) => {
        options.logger.error({ err: error }, 'collecting metrics failed');
        res.writeHead(500).end();
      },
    );
  });
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  options.logger.info({ host: options.host, port }, 'metrics listener started (/metrics, /healthz)');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
