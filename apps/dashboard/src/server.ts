import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AddressInfo } from 'node:net';
import fastifyFormbody from '@fastify/formbody';
import fastifyRateLimit from '@fastify/rate-limit';
import { ConfigError } from '@trawl/config';
import { tokenId, TokenSet } from '@trawl/core';
import { SIGNATURE_DIRECTORY_PATH, SIGNATURE_DIRECTORY_TYPE, signatureDirectory } from '@trawl/fetch';
import { isLoopback, type Runtime } from '@trawl/runtime';
import Fastify, { type FastifyBaseLogger, type FastifyError, LogController } from 'fastify';
import { registerAuth } from './auth.js';
import { registerBoard } from './board.js';
import { ApiError, sendProblem } from './http.js';
import { IdempotencyStore } from './idempotency.js';
import { dashboardMetrics } from './metrics.js';
import { openApiDocument } from './openapi.js';
import { CrawlOperator } from './operator.js';
import { registerPages } from './pages.js';
import { SessionStore } from './sessions.js';
import { apiRoutes, registerApiRoutes } from './routes.js';

export interface DashboardOptions {
  /** Default: TRAWL_DASHBOARD_HOST. */
  host?: string;
  /** Default: TRAWL_DASHBOARD_PORT (0: any free port). */
  port?: number;
  /** How often bull-board looks for queues that appeared (default 60 s). */
  rediscoverQueuesMs?: number;
}

export interface DashboardServer {
  url: string;
  host: string;
  port: number;
  /** Where the generated sign-in token was written (no TRAWL_API_TOKENS, loopback only), else null. */
  tokenFile: string | null;
  operator: CrawlOperator;
  close(): Promise<void>;
}

/**
 * The API tokens: TRAWL_API_TOKENS, or — only on a loopback address — one random token written
 * to TRAWL_DASHBOARD_TOKEN_FILE (mode 0600), so even a local dashboard never runs open. Anything
 * else is refused at start.
 */
function resolveTokens(config: Runtime['config'], host: string): { secrets: string[]; tokenFile: string | null } {
  if (config.dashboard.apiTokens.length > 0) return { secrets: [...config.dashboard.apiTokens], tokenFile: null };
  // Read-only tokens alone open nothing for writing: the loopback token below is made all the same.
  if (!isLoopback(host)) {
    throw new ConfigError([`TRAWL_API_TOKENS (dashboard.apiTokens): the dashboard would listen on ${host}, which is not a loopback address, without a token; set TRAWL_API_TOKENS, or listen on 127.0.0.1`]);
  }
  const token = randomBytes(32).toString('base64url');
  const file = config.dashboard.tokenFile;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { secrets: [token], tokenFile: file };
}

/** TRAWL_TRUST_PROXY as Fastify takes it (a number of hops as a function of the hop). */
const proxyTrust = (setting: boolean | number | string[]): boolean | string[] | ((address: string, hop: number) => boolean) =>
  typeof setting === 'number' ? (_address, hop) => hop < setting : setting;

/**
 * The dashboard on a runtime: bull-board at /queues, the REST API under /v1 (OpenAPI at
 * /v1/openapi.json, a reference at /v1/docs), trawl's pages, /metrics and /healthz — every route
 * but /healthz (and /metrics when TRAWL_METRICS_OPEN) behind a token or a signed-in session.
 */
export async function startDashboard(runtime: Runtime, options: DashboardOptions = {}): Promise<DashboardServer> {
  const { config } = runtime;
  const host = options.host ?? config.dashboard.host;
  const port = options.port ?? config.dashboard.port;
  const { secrets: writers, tokenFile } = resolveTokens(config, host);
  // A token in both lists can write: the read-only ids are those of tokens only in the read list.
  const readers = config.dashboard.readTokens.filter((token) => !writers.includes(token));
  const secrets = [...writers, ...readers];
  const tokens = new TokenSet(secrets);
  const readOnlyIds = new Set(readers.map(tokenId));
  const log = runtime.logger.child({ component: 'dashboard' });
  const operator = new CrawlOperator(runtime, { rediscoverQueuesMs: options.rediscoverQueuesMs });
  const restored = await operator.restorePauses();
  if (restored > 0) log.info({ paused: restored }, 'pauses restored from PostgreSQL');
  const overrides = await operator.restoreRenderOverrides();
  if (overrides > 0) log.info({ overrides }, 'rendering overrides restored from PostgreSQL');

  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    // No line per request (pages poll every 2 s); errors are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.dashboard.bodyLimitBytes,
    // A host in a path (/hosts/:host, /v1/crawl/domains/:host/…) may be as long as a URL may.
    maxParamLength: config.policy.maxUrlLength,
    // A slow client cannot hold a connection open: the headers, the whole request (body
    // included) and any silence each have a deadline. Node checks them at least every second.
    requestTimeout: config.dashboard.requestTimeoutMs,
    connectionTimeout: config.dashboard.idleTimeoutMs,
    http: {
      headersTimeout: config.dashboard.headersTimeoutMs,
      requestTimeout: config.dashboard.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(config.dashboard.headersTimeoutMs / 4))),
    },
    // The client's address and protocol as a trusted proxy forwards them (TRAWL_TRUST_PROXY).
    trustProxy: proxyTrust(config.dashboard.trustProxy),
    genReqId: () => randomUUID(),
    return503OnClosing: true,
  });
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) return sendProblem(request, reply.headers(error.headers), error.status, error.code, error.message, error.details);
    const status = error.statusCode ?? 500;
    if (status === 413) return sendProblem(request, reply, 413, 'ERR_BODY_TOO_LARGE', `request body larger than ${config.dashboard.bodyLimitBytes} bytes`);
    if (status === 415) return sendProblem(request, reply, 415, 'ERR_UNSUPPORTED_MEDIA_TYPE', 'send application/json');
    if (status >= 400 && status < 500) return sendProblem(request, reply, status, status === 429 ? 'ERR_RATE_LIMITED' : 'ERR_BAD_REQUEST', error.message);
    // Never echo an internal error: its text may name servers or queries.
    log.error({ err: { message: error.message, code: (error as FastifyError).code, stack: error.stack }, url: request.url.split('?')[0] }, 'request failed');
    return sendProblem(request, reply, 500, 'ERR_INTERNAL', 'internal error (logged)');
  });
  app.setNotFoundHandler((request, reply) => sendProblem(request, reply, 404, 'ERR_NOT_FOUND', 'no such route'));

  // DNS rebinding: a page of another site whose name comes to resolve to this server sends its own
  // name in Host. Only the names this dashboard is reached by are answered (/healthz aside, for
  // health checks by address).
  const allowedHosts = new Set((config.dashboard.allowedHosts ?? (isLoopback(host) ? ['localhost', '127.0.0.1', '[::1]', '::1'] : [])).map((name) => name.toLowerCase()));
  if (allowedHosts.size > 0) {
    app.addHook('onRequest', async (request, reply) => {
      if (allowedHosts.has(request.hostname.toLowerCase()) || request.url === '/healthz') return;
      return sendProblem(request, reply, 421, 'ERR_HOST_NOT_ALLOWED', 'this dashboard does not answer to that host name (TRAWL_DASHBOARD_ALLOWED_HOSTS)');
    });
  }

  // Every answer: no sniffing, no framing (clickjacking), no referrer leaving the site. trawl's
  // own pages also get a Content-Security-Policy that allows nothing from another origin
  // (bull-board's UI sets inline configuration, so it keeps its own defaults).
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-content-type-options', 'nosniff').header('x-frame-options', 'DENY').header('referrer-policy', 'same-origin');
    const type = String(reply.getHeader('content-type') ?? '');
    if (type.startsWith('text/html') && !request.url.startsWith('/queues')) {
      reply.header('content-security-policy', "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    }
  });
  // An empty JSON body is no body (`curl -X POST -H 'content-type: application/json' …/pause`);
  // anything else goes through Fastify's own parser (prototype-poisoning checks included).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') done(null, undefined);
    else parseJson(request, text, done);
  });
  await app.register(fastifyFormbody);
  // Before any route, so every route is limited (the sign-in and sign-out pages too): the limit
  // applies to routes registered after it. Its hook runs after authentication names the caller.
  await app.register(fastifyRateLimit, {
    global: true,
    hook: 'preHandler',
    max: config.dashboard.rateLimitPerMinute,
    timeWindow: 60_000,
    redis: runtime.redis,
    nameSpace: `${config.namespace}:ratelimit:`,
    keyGenerator: (request) => request.caller?.tokenId ?? `ip:${request.ip}`,
    allowList: (request) => request.url === '/healthz',
    errorResponseBuilder: (_request, context) => new ApiError(429, 'ERR_RATE_LIMITED', `more than ${context.max} requests a minute; retry in ${Math.ceil(context.ttl / 1000)} s`),
  });
  await registerAuth(app, { tokens, readOnlyIds, secrets, sessionTtlMs: config.dashboard.sessionTtlMs, metricsOpen: config.metrics.open, sessions: new SessionStore(runtime.redis, config.namespace), now: () => Date.now() });

  app.get('/healthz', async () => ({ status: 'ok' }));
  // Web Bot Auth: the public key sites verify trawl's request signatures with (public, like /healthz).
  app.get(SIGNATURE_DIRECTORY_PATH, async (_request, reply) => {
    const key = runtime.signingKey;
    if (key === null) throw new ApiError(404, 'ERR_NOT_FOUND', 'requests are not signed (TRAWL_SIGNATURE_KEY_FILE is unset)');
    return reply.type(SIGNATURE_DIRECTORY_TYPE).header('cache-control', 'max-age=86400').send(JSON.stringify(signatureDirectory([key])));
  });
  const metrics = dashboardMetrics(operator);
  app.get('/metrics', async (_request, reply) => reply.type(metrics.contentType).send(await metrics.text()));

  const routes = apiRoutes(operator, new IdempotencyStore(runtime.redis, config.namespace));
  const document = openApiDocument(routes, { version: '1' });
  app.get('/v1/openapi.json', async () => document);
  registerApiRoutes(app, routes);
  registerPages(app, { namespace: config.namespace, openapi: () => document });
  const board = await registerBoard(app, await operator.allQueues(), { title: `trawl · ${config.namespace}` });
  const rediscover = setInterval(() => {
    operator.allQueues().then(board.setQueues, (error: unknown) => log.warn({ err: error }, 'queue discovery failed'));
  }, options.rediscoverQueuesMs ?? 60_000);
  rediscover.unref();

  try {
    await app.listen({ host, port });
  } catch (error) {
    clearInterval(rediscover);
    board.close();
    await operator.close();
    throw error;
  }
  const bound = (app.server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
  log.info({ url, tokenFile }, tokenFile ? `dashboard listening; sign in with the token in ${tokenFile}` : 'dashboard listening');
  return {
    url,
    host,
    port: bound,
    tokenFile,
    operator,
    async close() {
      clearInterval(rediscover);
      await app.close();
      board.close();
      await operator.close();
    },
  };
}
