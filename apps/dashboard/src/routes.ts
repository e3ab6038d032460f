import type { AdmissionStatus } from '@trawl/frontier';
import { SeedsRejected } from '@trawl/queue';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { ApiError, type Caller, issueLines, problemBody } from './http.js';
import type { IdempotencyStore } from './idempotency.js';
import type { CrawlOperator } from './operator.js';
import {
  domainStatus,
  fetchesQuery,
  freshnessQuery,
  freshnessReport,
  hostParams,
  hostPaused,
  hostRenderOverride,
  idempotencyKey,
  pausedState,
  recentFetches,
  renderOverrideBody,
  refreshAccepted,
  refreshBody,
  seedsAccepted,
  seedsBody,
  statsSchema,
  urlHashParams,
} from './schemas.js';

export interface RouteContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  caller: Caller;
  request: FastifyRequest;
}

export interface RouteResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** One REST route: its schemas (validation and the OpenAPI document) and its handler. */
export interface ApiRoute {
  method: 'GET' | 'POST';
  /** Fastify path syntax (`:host`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** The body may be left out (its schema's default applies). */
  bodyOptional?: boolean;
  headers?: { name: string; schema: z.ZodType }[];
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  handler: (ctx: RouteContext<any, any, any>) => Promise<RouteResult>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const route = <P extends z.ZodObject | undefined, Q extends z.ZodObject | undefined, B extends z.ZodType | undefined>(
  def: Omit<ApiRoute, 'handler' | 'params' | 'query' | 'body'> & {
    params?: P;
    query?: Q;
    body?: B;
    handler: (ctx: RouteContext<P extends z.ZodObject ? z.output<P> : undefined, Q extends z.ZodObject ? z.output<Q> : undefined, B extends z.ZodType ? z.output<B> : undefined>) => Promise<RouteResult>;
  },
): ApiRoute => def as ApiRoute;

const notFound = (what: string) => new ApiError(404, 'ERR_NOT_FOUND', what);

/**
 * When a client refused by seed admission should try again. A scheduler looks every second, but
 * a frontier drains at the crawl's fetch rate: a minute keeps refused clients from hammering.
 */
export const ADMISSION_RETRY_AFTER_S = 60;

const frontierFull = (status: AdmissionStatus): ApiError =>
  new ApiError(
    429,
    'ERR_FRONTIER_FULL',
    `seed admission is paused: the frontier holds ${status.queued} queued URLs, at or above TRAWL_FRONTIER_MAX_QUEUED (${status.maxQueued}); seeds are accepted again once it drains below ${status.resumeBelow}. Nothing was applied: retry after ${ADMISSION_RETRY_AFTER_S} s`,
    [`queued: ${status.queued}`, `max_queued: ${status.maxQueued}`, `resume_below: ${status.resumeBelow}`],
    { 'retry-after': String(ADMISSION_RETRY_AFTER_S) },
  );

/** The REST API v1 on one operator. */
export function apiRoutes(operator: CrawlOperator, idempotency: IdempotencyStore): ApiRoute[] {
  const paused = async () => ({ status: 200, body: await operator.paused() });
  const setPaused = (host: string, value: boolean, caller: Caller) => operator.setPaused([host], value, caller.tokenId);
  return [
    route({
      method: 'POST',
      path: '/v1/crawl/seeds',
      operationId: 'addSeeds',
      summary: 'Add seed URLs',
      description:
        'Normalizes every URL first: one malformed URL refuses the whole request (400, naming each one) and nothing is applied. Valid seeds widen the crawl\'s scope and enter the frontier. With an `Idempotency-Key`, a replay within 24 h returns the original response and enqueues nothing; the same key with a different body is refused (422).',
      tag: 'seeds',
      body: seedsBody,
      headers: [{ name: 'Idempotency-Key', schema: idempotencyKey }],
      responses: {
        202: { description: 'Accepted: the seeds are in the frontier (or were known)', schema: seedsAccepted },
        413: { description: 'More URLs than TRAWL_API_MAX_SEEDS allows in one request (nothing applied)' },
        409: { description: 'A request with this Idempotency-Key is still running' },
        422: { description: 'The Idempotency-Key was used with a different body' },
        429: { description: 'Seed admission is paused: the frontier holds TRAWL_FRONTIER_MAX_QUEUED URLs or more (`ERR_FRONTIER_FULL`, nothing applied; `Retry-After` says when to try again), or the token sent too many requests (`ERR_RATE_LIMITED`)' },
      },
      handler: async ({ body, caller, request }) => {
        const most = operator.runtime.config.dashboard.maxSeedsPerRequest;
        if (body.urls.length > most) throw new ApiError(413, 'ERR_TOO_MANY_SEEDS', `${body.urls.length} URLs in one request; at most ${most} (TRAWL_API_MAX_SEEDS): send them in several requests`);
        const rawKey = request.headers['idempotency-key'];
        const run = async (): Promise<RouteResult> => {
          // Thrown, not answered: with an Idempotency-Key the key is released, so the same
          // request can be sent again once the frontier has drained.
          const admission = await operator.admission();
          if (admission.state === 'paused') throw frontierFull(admission);
          try {
            const result = await operator.addSeeds(body);
            return { status: 202, body: { ...result, request_id: String(request.id) } };
          } catch (error) {
            if (error instanceof SeedsRejected) return { status: 400, body: problemBody(request, 'ERR_SEEDS_INVALID', 'malformed seed URLs: nothing was queued', error.problems) };
            throw error;
          }
        };
        if (rawKey === undefined) return run();
        const key = idempotencyKey.safeParse(Array.isArray(rawKey) ? rawKey.join(',') : rawKey);
        if (!key.success) throw new ApiError(400, 'ERR_VALIDATION', 'invalid Idempotency-Key header', issueLines(key.error, 'Idempotency-Key'));
        const reservation = await idempotency.reserve('seeds', caller.tokenId, key.data, body);
        if (reservation.kind === 'mismatch') throw new ApiError(422, 'ERR_IDEMPOTENCY_MISMATCH', 'this Idempotency-Key was used with a different request body');
        if (reservation.kind === 'in-progress') throw new ApiError(409, 'ERR_IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is still running');
        if (reservation.kind === 'replay') return { status: reservation.status, body: reservation.body, headers: { 'idempotent-replayed': 'true' } };
        try {
          const result = await run();
          await reservation.complete(result.status, result.body);
          return result;
        } catch (error) {
          await reservation.release();
          throw error;
        }
      },
    }),
    route({
      method: 'GET',
      path: '/v1/crawl/domains/:host/status',
      operationId: 'domainStatus',
      summary: 'A host\'s politeness and queue state',
      description: 'Partition, the delay in force and why (configured delay, robots.txt Crawl-delay, back-off, adaptive), last and next fetch, queue depth, back-off, robots.txt state and rules, dead letters.',
      tag: 'domains',
      params: hostParams,
      responses: { 200: { description: 'The host\'s status', schema: domainStatus }, 404: { description: 'The crawl has never heard of this host' } },
      handler: async ({ params }) => {
        const status = await operator.domainStatus(params.host);
        if (!status) throw notFound(`unknown host: ${params.host}`);
        return { status: 200, body: status };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/crawl/domains/:host/fetches',
      operationId: 'domainFetches',
      summary: 'A host\'s recent fetches',
      tag: 'domains',
      params: hostParams,
      query: fetchesQuery,
      responses: { 200: { description: 'Newest first, from crawled_pages', schema: recentFetches } },
      handler: async ({ params, query }) => ({ status: 200, body: { host: params.host, fetches: await operator.recentFetches(params.host, query.limit) } }),
    }),
    route({
      method: 'POST',
      path: '/v1/crawl/domains/:host/pause',
      operationId: 'pauseDomain',
      summary: 'Pause one host',
      description: 'The host is never fetched until resumed (the dispatcher claims none of its URLs and the host gate turns its jobs away, returning their URLs to the frontier). A host not seen yet may be paused ahead of time.',
      tag: 'pause',
      params: hostParams,
      responses: { 200: { description: 'Paused', schema: hostPaused } },
      handler: async ({ params, caller }) => {
        await setPaused(params.host, true, caller);
        return { status: 200, body: { host: params.host, paused: true } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/crawl/domains/:host/resume',
      operationId: 'resumeDomain',
      summary: 'Resume one host',
      tag: 'pause',
      params: hostParams,
      responses: { 200: { description: 'Resumed', schema: hostPaused } },
      handler: async ({ params, caller }) => {
        await setPaused(params.host, false, caller);
        return { status: 200, body: { host: params.host, paused: false } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/crawl/domains/:host/render',
      operationId: 'setDomainRender',
      summary: 'Override whether one host\'s pages are rendered',
      description:
        'Every worker of the crawl follows it within a few seconds, for the pages it fetches from then on: `always` renders each HTML page of the host in headless Chromium, `never` none, `auto` clears the override (TRAWL_RENDER decides). Kept in PostgreSQL (a frontier rebuilt after Redis lost the crawl restores it) and in Redis, which the workers read. With TRAWL_RENDER=never no worker renders at all, whatever the override.',
      tag: 'domains',
      params: hostParams,
      body: renderOverrideBody,
      responses: { 200: { description: 'Set', schema: hostRenderOverride } },
      handler: async ({ params, body, caller }) => {
        const mode = body.mode === 'auto' ? null : body.mode;
        await operator.setRenderOverride(params.host, mode, caller.tokenId);
        return { status: 200, body: { host: params.host, render_override: mode } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/crawl/pause',
      operationId: 'pauseCrawl',
      summary: 'Pause the whole crawl',
      description: 'No host is fetched until resumed; hosts paused one by one stay paused after the crawl-wide resume.',
      tag: 'pause',
      responses: { 200: { description: 'What is paused now', schema: pausedState } },
      handler: async ({ caller }) => {
        await operator.setPaused(['*'], true, caller.tokenId);
        return paused();
      },
    }),
    route({
      method: 'POST',
      path: '/v1/crawl/resume',
      operationId: 'resumeCrawl',
      summary: 'Resume the whole crawl',
      tag: 'pause',
      responses: { 200: { description: 'What is paused now', schema: pausedState } },
      handler: async ({ caller }) => {
        await operator.setPaused(['*'], false, caller.tokenId);
        return paused();
      },
    }),
    route({
      method: 'GET',
      path: '/v1/crawl/paused',
      operationId: 'paused',
      summary: 'What is paused',
      tag: 'pause',
      responses: { 200: { description: 'The crawl-wide pause and the paused hosts', schema: pausedState } },
      handler: paused,
    }),
    route({
      method: 'POST',
      path: '/v1/crawl/urls/:url_hash/refresh',
      operationId: 'refreshUrl',
      summary: 'Re-crawl one URL now',
      description: 'The URL goes back into the frontier past the seen-set, flagged as a re-crawl, in the top priority band (or the band of `priority`); it is fetched when its host is next due (never early).',
      tag: 'urls',
      params: urlHashParams,
      body: refreshBody,
      bodyOptional: true,
      responses: { 202: { description: 'Queued', schema: refreshAccepted }, 404: { description: 'No URL with this fingerprint' } },
      handler: async ({ params, body }) => {
        const queued = await operator.refresh(Buffer.from(params.url_hash, 'hex'), body.priority);
        if (!queued) throw notFound(`unknown url_hash: ${params.url_hash}`);
        return { status: 202, body: queued };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/crawl/stats',
      operationId: 'stats',
      summary: 'The crawl\'s statistics',
      description: 'Frontier, fetch rate against polite capacity, queues, counters, outcomes, dead letters, re-crawl deadlines, schedulers, workers and database counts (computed at most every 2 s; the aggregates over whole PostgreSQL tables — URL and page counts, error codes, re-crawl deadlines — every 30 s).',
      tag: 'stats',
      responses: { 200: { description: 'Statistics', schema: statsSchema } },
      handler: async () => ({ status: 200, body: await operator.snapshot() }),
    }),
    route({
      method: 'GET',
      path: '/v1/crawl/freshness',
      operationId: 'freshness',
      summary: 'The freshness report',
      description: 'Per host and in total: pages, scheduled and overdue pages, re-crawls and the re-crawl deadline-miss rate. `host` restricts it to one host.',
      tag: 'stats',
      query: freshnessQuery,
      responses: { 200: { description: 'The report', schema: freshnessReport } },
      handler: async ({ query }) => ({
        status: 200,
        body: await operator.freshnessReport(query.host ?? null, { graceMs: query.grace_s * 1000, recentMs: query.recent_s * 1000 }),
      }),
    }),
  ];
}

/** Registers routes: validates params, query and body (400 naming each problem), and the response (500 if it breaks its schema). */
export function registerApiRoutes(app: FastifyInstance, routes: readonly ApiRoute[]): void {
  for (const def of routes) {
    app.route({
      method: def.method,
      url: def.path,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const problems: string[] = [];
        const parse = <S extends z.ZodType>(schema: S | undefined, value: unknown, where: string): z.output<S> | undefined => {
          if (!schema) return undefined;
          const result = schema.safeParse(value);
          if (!result.success) {
            problems.push(...issueLines(result.error, where));
            return undefined;
          }
          return result.data;
        };
        const params = parse(def.params, request.params, '');
        const query = parse(def.query, request.query, '');
        const missing = def.body !== undefined && request.body === undefined && !def.bodyOptional;
        if (missing) problems.push('body: required (application/json)');
        const body = missing ? undefined : parse(def.body, request.body, 'body');
        if (problems.length > 0) throw new ApiError(400, 'ERR_VALIDATION', 'invalid request', problems);
        const result = await def.handler({ params, query, body, caller: request.caller as Caller, request });
        const schema = def.responses[result.status]?.schema;
        if (schema && result.status < 300) {
          const checked = schema.safeParse(result.body);
          if (!checked.success) {
            request.log.error({ route: def.path, problems: issueLines(checked.error) }, 'response does not match its schema');
            throw new ApiError(500, 'ERR_INTERNAL', 'the response did not match its schema');
          }
        }
        return reply.code(result.status).headers(result.headers ?? {}).send(result.body);
      },
    });
  }
}
