import type { Runtime } from '@trawl/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, startDashboard } from '../src/index.js';
import { dropNamespace, LogCapture, openRuntime, TOKEN_A, uniqueNamespace } from './helpers.js';

// Seed admission at the REST API: at TRAWL_FRONTIER_MAX_QUEUED queued URLs, POST /v1/crawl/seeds
// answers 429 with Retry-After and applies nothing, until the frontier drains below 90 % of it.
const namespace = uniqueNamespace('dashadmit');
const logs = new LogCapture();
let runtime: Runtime;
let server: DashboardServer;

async function call(method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN_A}`, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

/** Claims URLs (as a dispatcher would) until `left` are queued. */
async function drainTo(left: number): Promise<void> {
  while ((await runtime.frontier.queuedCount()) > left) await runtime.frontier.claim(0, 1);
}

const knownUrls = async (): Promise<number> => Object.values((await runtime.db.counts()).urls).reduce((a, b) => a + b, 0);

beforeAll(async () => {
  runtime = await openRuntime(namespace, { TRAWL_FRONTIER_MAX_QUEUED: '5', TRAWL_METRICS_PORT: '0' }, logs);
  server = await startDashboard(runtime, { host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await server?.close();
  await runtime?.close();
  await dropNamespace(namespace);
});

describe('POST /v1/crawl/seeds under seed admission', () => {
  it('admits below the threshold, then answers 429 with Retry-After and applies nothing', async () => {
    const first = await call('POST', '/v1/crawl/seeds', { body: { urls: ['http://a.example/', 'http://b.example/', 'http://c.example/', 'http://d.example/', 'http://e.example/'] } });
    expect(first).toMatchObject({ status: 202, body: { enqueued: 5 } });
    expect(await runtime.frontier.queuedCount()).toBe(5);
    const known = await knownUrls();

    const refused = await call('POST', '/v1/crawl/seeds', { body: { urls: ['http://f.example/'] } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.body).toMatchObject({
      error: {
        code: 'ERR_FRONTIER_FULL',
        message: expect.stringMatching(/frontier holds 5 queued URLs, at or above TRAWL_FRONTIER_MAX_QUEUED \(5\); seeds are accepted again once it drains below 4/),
        details: ['queued: 5', 'max_queued: 5', 'resume_below: 4'],
      },
      request_id: expect.any(String),
    });
    expect(await runtime.frontier.queuedCount()).toBe(5);
    expect(await knownUrls()).toBe(known);
  });

  it('shows the state in /v1/crawl/stats and /metrics', async () => {
    const stats = await call('GET', '/v1/crawl/stats');
    expect(stats.body.admission).toMatchObject({ state: 'paused', queued: 5, maxQueued: 5, resumeBelow: 4, since: expect.stringMatching(/^\d{4}-/) });
    const metrics = (await call('GET', '/metrics')).text;
    expect(metrics).toMatch(/^trawl_seed_admission_paused\{[^}]*\} 1$/m);
    expect(metrics).toMatch(/^trawl_frontier_max_queued\{[^}]*\} 5$/m);
    expect(metrics).toMatch(/^trawl_frontier_resume_below\{[^}]*\} 4$/m);
    expect(metrics).toMatch(/^trawl_frontier_queued_urls\{[^}]*\} 5$/m);
  });

  it('keeps refusing until the frontier is below 90 %, and a refused Idempotency-Key can be sent again', async () => {
    const key = { 'idempotency-key': 'admission-1' };
    const body = { urls: ['http://g.example/'] };
    expect((await call('POST', '/v1/crawl/seeds', { body, headers: key })).status).toBe(429);
    await drainTo(4);
    // 4 of 5 is not below the resume mark (4): still paused.
    expect((await call('POST', '/v1/crawl/seeds', { body, headers: key })).status).toBe(429);
    await drainTo(3);
    const accepted = await call('POST', '/v1/crawl/seeds', { body, headers: key });
    expect(accepted).toMatchObject({ status: 202, body: { enqueued: 1 } });
    expect(await runtime.frontier.queuedCount()).toBe(4);
  });
});
