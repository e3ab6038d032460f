import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fingerprint } from '@trawl/url';
import { decodeFetchJob, FetchQueues, FetchWorker } from '@trawl/queue';
import { WorkerMembership } from '@trawl/dispatch';
import { decodeEntry, UrlFlag } from '@trawl/frontier';
import { OperatorQueries } from '@trawl/db';
import { RenderOverrides } from '@trawl/model';
import { pauseBlockedHost, restoreRenderOverrides, type Runtime, serveProcessMetrics } from '@trawl/runtime';
import { createRedis } from '@trawl/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, startDashboard } from '../src/index.js';
import { DATABASE_URL, dropNamespace, LogCapture, openRuntime, REDIS_URL, TOKEN_A, TOKEN_B, TOKEN_C, uniqueNamespace } from './helpers.js';

// The REST API, bull-board and the pages behind authentication, against real Redis, PostgreSQL
// and an HTTP server on port 0: every route and every error.
const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const namespace = uniqueNamespace('dashapi');
const logs = new LogCapture();
let runtime: Runtime;
let server: DashboardServer;
let base: string;

const auth = (token = TOKEN_A) => ({ authorization: `Bearer ${token}` });
const authInit = (token = TOKEN_A) => ({ headers: auth(token) });
const json = { 'content-type': 'application/json' };
async function call(method: string, path: string, options: { token?: string | null; body?: unknown; headers?: Record<string, string>; raw?: string } = {}) {
  const headers: Record<string, string> = { ...(options.token === null ? {} : auth(options.token)), ...(options.body !== undefined || options.raw !== undefined ? json : {}), ...options.headers };
  const res = await fetch(`${base}${path}`, { method, headers, body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)), redirect: 'manual' });
  const text = await res.text();
  let body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers };
}

// A Web Bot Auth key, so the dashboard serves its directory.
const signing = generateKeyPairSync('ed25519');
const KEY_FILE = join(tmpdir(), `trawl-${namespace}-signing.pem`);

beforeAll(async () => {
  writeFileSync(KEY_FILE, signing.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, { mode: 0o600 });
  runtime = await openRuntime(namespace, { TRAWL_API_RATE_LIMIT: '150', TRAWL_API_BODY_LIMIT_BYTES: '4096', TRAWL_SIGNATURE_KEY_FILE: KEY_FILE, TRAWL_METRICS_PORT: '0' }, logs);
  server = await startDashboard(runtime, { host: '127.0.0.1', port: 0 });
  base = server.url;
});

afterAll(async () => {
  await server?.close();
  await runtime?.close();
  await dropNamespace(namespace);
  // No token ever reaches a log line.
  for (const token of [TOKEN_A, TOKEN_B, TOKEN_C]) expect(logs.text).not.toContain(token);
});

describe('authentication', () => {
  it('answers /healthz without credentials', async () => {
    expect(await call('GET', '/healthz', { token: null })).toMatchObject({ status: 200, body: { status: 'ok' } });
  });

  it.each([
    ['GET', '/v1/crawl/stats'],
    ['GET', '/v1/crawl/freshness'],
    ['GET', '/v1/crawl/paused'],
    ['GET', '/v1/crawl/domains/a.example/status'],
    ['GET', '/v1/crawl/domains/a.example/fetches'],
    ['POST', '/v1/crawl/domains/a.example/pause'],
    ['POST', '/v1/crawl/domains/a.example/resume'],
    ['POST', '/v1/crawl/domains/a.example/render'],
    ['POST', '/v1/crawl/pause'],
    ['POST', '/v1/crawl/resume'],
    ['POST', '/v1/crawl/seeds'],
    ['POST', `/v1/crawl/urls/${'0'.repeat(32)}/refresh`],
    ['GET', '/v1/openapi.json'],
    ['GET', '/v1/docs'],
    ['GET', '/metrics'],
    ['GET', '/queues/'],
    ['GET', '/queues/api/queues'],
    ['PUT', '/queues/api/queues/fetch-p0/retry/failed'],
    ['GET', '/'],
    ['GET', '/freshness'],
    ['GET', '/hosts/a.example'],
    ['GET', '/static/app.js'],
    ['GET', '/static/uplot.js'],
    ['GET', '/no/such/route'],
  ])('refuses %s %s without credentials, and with a wrong token', async (method, path) => {
    const none = await call(method, path, { token: null });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('ERR_UNAUTHORIZED');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await call(method, path, { token: `${TOKEN_A}x` });
    expect(wrong.status).toBe(401);
  });

  it('refuses another scheme and a malformed header', async () => {
    expect((await call('GET', '/v1/crawl/stats', { token: null, headers: { authorization: `Basic ${TOKEN_A}` } })).status).toBe(401);
    expect((await call('GET', '/v1/crawl/stats', { token: null, headers: { authorization: 'Bearer' } })).status).toBe(401);
  });

  it('sets security headers, and a Content-Security-Policy that allows nothing from elsewhere on pages', async () => {
    for (const path of ['/signin', '/']) {
      const res = await fetch(`${base}${path}`, { headers: auth() });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'; script-src 'self';.*frame-ancestors 'none'/);
    }
  });

  it('sends a browser without a session to the sign-in page', async () => {
    const res = await call('GET', '/hosts/a.example', { token: null, headers: { accept: 'text/html' } });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/signin?next=%2Fhosts%2Fa.example');
  });
});

describe('sessions and CSRF', () => {
  const origin = () => ({ origin: base, 'content-type': 'application/x-www-form-urlencoded' });
  async function signIn(token: string): Promise<string> {
    const res = await fetch(`${base}/signin`, { method: 'POST', headers: origin(), body: `token=${encodeURIComponent(token)}&next=%2Ffreshness`, redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/freshness');
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^trawl_session=/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Max-Age=\d+/);
    expect(cookie).not.toContain(token);
    return cookie.split(';')[0] as string;
  }

  it('signs in with a token and then needs the CSRF token and the same origin for writes', async () => {
    const cookie = await signIn(TOKEN_B);
    const page = await fetch(`${base}/`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const csrf = /name="csrf-token" content="([^"]+)"/.exec(await page.text())?.[1] as string;
    expect(csrf).toMatch(/^[\w-]{20,}$/);
    expect((await call('GET', '/v1/crawl/paused', { token: null, headers: { cookie } })).status).toBe(200);
    const post = (headers: Record<string, string>) => call('POST', '/v1/crawl/domains/csrf.example/pause', { token: null, headers: { cookie, ...headers } });
    expect((await post({ 'sec-fetch-site': 'same-origin' })).body.error.code).toBe('ERR_CSRF');
    expect((await post({ 'sec-fetch-site': 'same-origin', 'x-csrf-token': 'wrong' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'cross-site', 'x-csrf-token': csrf })).status).toBe(403);
    expect((await post({ origin: 'http://evil.example', 'x-csrf-token': csrf })).status).toBe(403);
    expect((await post({ 'x-csrf-token': csrf })).status).toBe(403); // neither Sec-Fetch-Site nor Origin
    const ok = await post({ 'sec-fetch-site': 'same-origin', 'x-csrf-token': csrf });
    expect(ok).toMatchObject({ status: 200, body: { host: 'csrf.example', paused: true } });
    expect((await post({ origin: base, 'x-csrf-token': csrf })).status).toBe(200);
    // bull-board's own calls need the same origin (its UI cannot send our token).
    const add = (headers: Record<string, string>) => call('POST', '/queues/api/queues/seeds/add', { token: null, headers: { cookie, ...headers }, body: { name: 'seeds', data: { urls: ['http://board.example/'] }, options: {} } });
    expect((await add({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await add({ 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    // Signing out ends the session.
    const out = await fetch(`${base}/signout`, { method: 'POST', headers: { cookie, origin: base, 'content-type': 'application/x-www-form-urlencoded' }, body: `_csrf=${csrf}`, redirect: 'manual' });
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toMatch(/trawl_session=;/);
    await call('POST', '/v1/crawl/domains/csrf.example/resume');
  });

  it('refuses a wrong token, a cross-site sign-in, and a tampered or foreign cookie', async () => {
    const wrong = await fetch(`${base}/signin`, { method: 'POST', headers: origin(), body: 'token=not-a-token', redirect: 'manual' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const crossSite = await fetch(`${base}/signin`, { method: 'POST', headers: { ...origin(), origin: 'http://evil.example' }, body: `token=${TOKEN_B}`, redirect: 'manual' });
    expect(crossSite.status).toBe(403);
    const cookie = await signIn(TOKEN_B);
    const [name, value] = cookie.split('=') as [string, string];
    // One signature character changed (the second to last: every bit of it is data). Chosen from
    // that character, so the value always differs.
    const tampered = `${name}=${value.slice(0, -2)}${value.at(-2) === 'A' ? 'B' : 'A'}${value.slice(-1)}`;
    expect(tampered).not.toBe(cookie);
    expect((await call('GET', '/v1/crawl/paused', { token: null, headers: { cookie: tampered } })).status).toBe(401);
    const forged = `${name}=${Buffer.from(JSON.stringify({ t: 'tok:00000000', exp: Date.now() + 1e6, c: 'x' })).toString('base64url')}.AAAA`;
    expect((await call('GET', '/v1/crawl/paused', { token: null, headers: { cookie: forged } })).status).toBe(401);
    // A redirect target is always on this server.
    const evilNext = await fetch(`${base}/signin`, { method: 'POST', headers: origin(), body: `token=${TOKEN_B}&next=%2F%2Fevil.example%2F`, redirect: 'manual' });
    expect(evilNext.headers.get('location')).toBe('/');
  });
});

describe('POST /v1/crawl/seeds', () => {
  it('queues valid seeds: 202 with counts and a request id', async () => {
    const res = await call('POST', '/v1/crawl/seeds', { body: { urls: ['http://seed1.example/', 'http://seed1.example/a', 'http://seed2.example/'], priority: 0.9, max_depth: 5 } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ enqueued: 3, already_seen: 0 });
    expect(res.body.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await runtime.frontier.hostState('seed1.example')).queued).toBe(2);
    const again = await call('POST', '/v1/crawl/seeds', { body: { urls: ['http://seed1.example/'] } });
    expect(again.body).toMatchObject({ enqueued: 0, already_seen: 1 });
  });

  it('sets and clears a host\'s rendering override, for every worker (Redis) and durably (PostgreSQL), and refuses an unknown mode', async () => {
    const overrides = new RenderOverrides(runtime.redis, runtime.config.namespace, () => 0, 0);
    const durable = async () => (await new OperatorQueries(runtime.db.pool, runtime.config.namespace).renderOverrides()).filter((r) => r.host === 'render.example').map((r) => r.mode);
    expect(await call('POST', '/v1/crawl/domains/render.example/render', { body: { mode: 'never' } })).toMatchObject({ status: 200, body: { host: 'render.example', render_override: 'never' } });
    expect(await overrides.of('render.example')).toBe('never');
    expect(await durable()).toEqual(['never']);
    expect((await call('POST', '/v1/crawl/domains/render.example/render', { body: { mode: 'sometimes' } })).status).toBe(400);
    expect(await overrides.of('render.example')).toBe('never');
    expect(await durable()).toEqual(['never']);
    // Redis loses it: the dashboard's restore (as at its start, or a rebuild's) puts it back.
    await runtime.redis.hdel(`${runtime.config.namespace}:render:hosts`, 'render.example');
    expect(await restoreRenderOverrides(runtime)).toBeGreaterThanOrEqual(1);
    expect(await overrides.of('render.example')).toBe('never');
    expect(await call('POST', '/v1/crawl/domains/render.example/render', { body: { mode: 'auto' } })).toMatchObject({ status: 200, body: { render_override: null } });
    expect(await overrides.of('render.example')).toBeNull();
    expect(await durable()).toEqual([]);
  });

  it('refuses a request with malformed URLs whole, naming each, and applies nothing', async () => {
    const before = await runtime.frontier.stats();
    const res = await call('POST', '/v1/crawl/seeds', { body: { urls: ['http://fine.example/', 'notaurl', 'ftp://files.example/x'] } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('ERR_SEEDS_INVALID');
    expect(res.body.error.details).toHaveLength(2);
    expect(res.body.error.details[0]).toMatch(/^urls\.1: "notaurl"/);
    expect(res.body.error.details[1]).toMatch(/^urls\.2: "ftp:\/\/files\.example\/x"/);
    expect((await runtime.frontier.stats()).queued).toBe(before.queued);
    expect((await runtime.frontier.hostState('fine.example')).total).toBe(0);
  });

  it.each([
    ['no body', undefined, /body: required/],
    ['urls missing', {}, /body\.urls: /],
    ['urls empty', { urls: [] }, /give at least one URL/],
    ['priority out of range', { urls: ['http://x.example/'], priority: 2 }, /body\.priority: /],
    ['an unknown field', { urls: ['http://x.example/'], extra: 1 }, /Unrecognized key/],
    ['a bad scope', { urls: ['http://x.example/'], scope: 'galaxy' }, /body\.scope/],
  ])('400 for an invalid body: %s', async (_name, body, message) => {
    const res = await call('POST', '/v1/crawl/seeds', { body });
    expect(res.status).toBe(400);
    expect(['ERR_VALIDATION', 'ERR_BAD_REQUEST']).toContain(res.body.error.code);
    expect(JSON.stringify(res.body.error)).toMatch(message);
  });

  it('an empty JSON body counts as no body', async () => {
    const res = await call('POST', '/v1/crawl/seeds', { raw: '' });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual(['body: required (application/json)']);
    expect((await call('POST', '/v1/crawl/resume', { raw: '' })).status).toBe(200);
  });

  it('400 for a body that is not JSON, or poisoned', async () => {
    expect((await call('POST', '/v1/crawl/seeds', { raw: '{"urls": ["http://x.example/"], "__proto__": {"polluted": true}}' })).status).toBe(400);
    const res = await call('POST', '/v1/crawl/seeds', { raw: '{"urls": [' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('ERR_BAD_REQUEST');
  });

  it('413 for an oversize body', async () => {
    const res = await call('POST', '/v1/crawl/seeds', { body: { urls: Array.from({ length: 200 }, (_, i) => `http://big.example/${i}`) } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('ERR_BODY_TOO_LARGE');
  });

  it('replays an Idempotency-Key within 24 h: the same response, nothing enqueued again', async () => {
    const body = { urls: ['http://idem.example/1', 'http://idem.example/2'] };
    const key = { 'idempotency-key': 'order-42' };
    const first = await call('POST', '/v1/crawl/seeds', { body, headers: key });
    expect(first.status).toBe(202);
    expect(first.body.enqueued).toBe(2);
    // Forget the URLs in the frontier: a replay that ran again would push them back.
    const queuedBefore = (await runtime.frontier.stats()).queued;
    const replay = await call('POST', '/v1/crawl/seeds', { body: { urls: [...body.urls] }, headers: key });
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await runtime.frontier.stats()).queued).toBe(queuedBefore);
    // The same key with another body: 422. Another token's key of the same name: its own.
    const mismatch = await call('POST', '/v1/crawl/seeds', { body: { urls: ['http://idem.example/3'] }, headers: key });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.error.code).toBe('ERR_IDEMPOTENCY_MISMATCH');
    const other = await call('POST', '/v1/crawl/seeds', { token: TOKEN_B, body: { urls: ['http://idem.example/3'] }, headers: key });
    expect(other.status).toBe(202);
    expect(other.body.enqueued).toBe(1);
    // A refused request is replayed as refused.
    const badKey = { 'idempotency-key': 'order-43' };
    const refused = await call('POST', '/v1/crawl/seeds', { body: { urls: ['nope'] }, headers: badKey });
    expect(refused.status).toBe(400);
    expect(await call('POST', '/v1/crawl/seeds', { body: { urls: ['nope'] }, headers: badKey })).toMatchObject({ status: 400, body: refused.body });
    const ttl = await runtime.redis.pttl((await runtime.redis.keys(`${namespace}:idem:*`))[0] as string);
    expect(ttl).toBeGreaterThan(23 * 3_600_000);
    expect(ttl).toBeLessThanOrEqual(24 * 3_600_000);
  });

  it('400 for an invalid Idempotency-Key', async () => {
    const res = await call('POST', '/v1/crawl/seeds', { body: { urls: ['http://x.example/'] }, headers: { 'idempotency-key': 'has space' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details[0]).toMatch(/^Idempotency-Key: /);
  });
});

describe('GET /v1/crawl/domains/{host}/status', () => {
  beforeAll(async () => {
    const now = runtime.clock.now();
    // A host backing off: fetched, failed twice.
    await runtime.frontier.push([{ url: 'http://slow.example/1', host: 'slow.example', depth: 0, hops: 0, flags: 0, priority: 0.5 }, { url: 'http://slow.example/2', host: 'slow.example', depth: 0, hops: 0, flags: 0, priority: 0.5 }]);
    const claim = await runtime.frontier.claim(runtime.frontier.partitionOf('slow.example'), 100);
    const lease = claim.leases.find((l) => l.host === 'slow.example')!;
    const ticket = { partition: lease.partition, host: lease.host, leaseId: lease.id, token: 't1', band: lease.band, entry: lease };
    expect((await runtime.frontier.acquire(ticket)).kind).toBe('ok');
    await runtime.frontier.release(ticket, now + 20_000, { health: { streak: 2, backoffMs: 20_000 } });
    // Leases of the other hosts that claim took go back (as if fetched).
    for (const other of claim.leases.filter((l) => l !== lease)) {
      const t = { partition: other.partition, host: other.host, leaseId: other.id, token: 't1', band: other.band, entry: other };
      await runtime.frontier.acquire(t);
      await runtime.frontier.release(t, now);
      await runtime.frontier.ack(other.partition, [other.id]);
    }
    await runtime.robots.set('http://rules.example', {
      kind: 'rules',
      status: 200,
      body: 'Content-Signal: search=yes, ai-train=no\nUser-agent: *\nDisallow: /private\nAllow: /private/ok\nCrawl-delay: 3\n',
      fetchedAt: now,
      expiresAt: now + 3_600_000,
    });
    await runtime.frontier.push([1, 2, 3].map((i) => ({ url: `http://rules.example/${i}`, host: 'rules.example', depth: 1, hops: 0, flags: 0, priority: 0.5 })));
  });

  it('says which delay is in force and why, with robots.txt and the queue', async () => {
    const res = await call('GET', '/v1/crawl/domains/rules.example/status');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      host: 'rules.example',
      partition: 0,
      paused: false,
      crawl_delay_ms: 3000,
      delay_reason: 'crawl-delay',
      queue_depth: 3,
      backoff_streak: 0,
      robots: { state: 'rules', status: 200, origin: 'http://rules.example', crawl_delay_ms: 3000, disallowed_paths: ['/private'] },
      dead_letters: 0,
    });
    expect(res.body.robots.rules).toEqual([{ allow: true, pattern: '/private/ok' }, { allow: false, pattern: '/private' }]);
    expect(res.body.robots.usage).toEqual([{ record: 'content-signal', path: null, values: { search: 'yes', 'ai-train': 'no' } }]);
  });

  it('shows what the host is ranked by: its linking hosts and its seeds\' priority', async () => {
    await runtime.frontier.noteHosts([
      { host: 'rules.example', seedPriority: 0.8 },
      { host: 'rules.example', linkedFrom: 'a.example' },
      { host: 'rules.example', linkedFrom: 'b.example' },
    ]);
    const res = await call('GET', '/v1/crawl/domains/rules.example/status');
    expect(res.body.rank).toMatchObject({ linking_hosts: 2, seed_priority: 0.8 });
    expect(res.body.rank.score).toBeGreaterThan(0.4);
    expect(res.body.rank.score).toBeLessThan(1);
  });

  it('answers with the flat fields of the original API design beside its own', async () => {
    const res = await call('GET', '/v1/crawl/domains/rules.example/status');
    const flat = {
      host: 'rules.example',
      worker_id: 0,
      crawl_delay_ms: 3000,
      last_fetched_at: null,
      next_available_at: expect.any(String),
      queue_depth: 3,
      backoff_until: null,
      robots_disallowed_paths: ['/private'],
    };
    expect(res.body).toMatchObject(flat);
    expect(res.body.worker_id).toBe(res.body.partition);
    // The OpenAPI document names them too.
    const doc = await call('GET', '/v1/openapi.json');
    const properties = doc.body.components.schemas.DomainStatus.properties;
    for (const name of Object.keys(flat)) expect(properties, name).toHaveProperty(name);
  });

  it('shows a host trawl paused as blocked, with its reason, until an operator resumes it', async () => {
    await runtime.frontier.push([{ url: 'http://walled.example/1', host: 'walled.example', depth: 0, hops: 0, flags: 0, priority: 0.5 }]);
    await pauseBlockedHost(runtime, 'walled.example', 'blocked: 3 refusals in a row, the last: a challenge page (HTTP 403, "px-captcha")');
    const res = await call('GET', '/v1/crawl/domains/walled.example/status');
    expect(res.body).toMatchObject({
      paused: true,
      proxy_tier: null,
      tier_level: 0,
      blocked_reason: 'blocked: 3 refusals in a row, the last: a challenge page (HTTP 403, "px-captcha")',
    });
    expect((await call('GET', '/v1/crawl/paused')).body.hosts).toContainEqual(
      expect.objectContaining({ host: 'walled.example', paused_by: 'trawl', reason: expect.stringContaining('challenge page') }),
    );
    expect((await call('POST', '/v1/crawl/domains/walled.example/resume')).status).toBeLessThan(300);
    const after = await call('GET', '/v1/crawl/domains/walled.example/status');
    expect(after.body).toMatchObject({ paused: false, blocked_reason: null, refusals: 0 });
  });

  it('reports back-off as the reason when it is longer than the base delay', async () => {
    const res = await call('GET', '/v1/crawl/domains/slow.example/status');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ crawl_delay_ms: 20_000, delay_reason: 'backoff', backoff_ms: 20_000, backoff_streak: 2, queue_depth: 1, robots: { state: 'missing' } });
    expect(Date.parse(res.body.next_available_at)).toBeGreaterThan(Date.now() + 10_000);
    expect(res.body.backoff_until).toBe(res.body.next_available_at);
  });

  it('404 for a host the crawl never heard of, 400 for a malformed one', async () => {
    const unknown = await call('GET', '/v1/crawl/domains/never.example/status');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('ERR_NOT_FOUND');
    const bad = await call('GET', '/v1/crawl/domains/Bad%20Host!/status');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0]).toMatch(/^host: /);
  });

  it('lists a host\'s recent fetches; 400 for a bad limit', async () => {
    const res = await call('GET', '/v1/crawl/domains/rules.example/fetches?limit=5');
    expect(res).toMatchObject({ status: 200, body: { host: 'rules.example', fetches: [] } });
    expect((await call('GET', '/v1/crawl/domains/rules.example/fetches?limit=0')).status).toBe(400);
  });
});

describe('the Web Bot Auth key directory', () => {
  it('serves the signing key\'s public half, without a token, as the directory media type', async () => {
    const res = await call('GET', '/.well-known/http-message-signatures-directory', { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/http-message-signatures-directory\+json\b/);
    const { x } = signing.publicKey.export({ format: 'jwk' }) as { x: string };
    expect(res.body).toEqual({ keys: [{ kty: 'OKP', crv: 'Ed25519', x }] });
  });
});

describe('POST /v1/crawl/urls/{url_hash}/refresh', () => {
  it('puts a known URL back in the frontier in the top band, flagged as a re-crawl, state queued', async () => {
    await call('POST', '/v1/crawl/seeds', { body: { urls: ['http://refresh.example/page'] } });
    const hash = fingerprint('http://refresh.example/page');
    await runtime.db.setState([hash], 'done');
    const partition = runtime.frontier.partitionOf('refresh.example');
    const topBand = `${namespace}:{p${partition}}:q:refresh.example:${runtime.config.dispatch.bands - 1}`;
    const before = await runtime.redis.llen(topBand);
    const res = await call('POST', `/v1/crawl/urls/${hash.toString('hex')}/refresh`);
    expect(res.status).toBe(202);
    expect(res.body.queued).toBe(true);
    expect(Date.parse(res.body.estimated_crawl_at)).toBeGreaterThan(0);
    // Past the seen-set (the URL is known), into the top band, flagged as a re-crawl.
    expect(await runtime.redis.llen(topBand)).toBe(before + 1);
    const entry = decodeEntry((await runtime.redis.lindex(topBand, -1)) as string, 'refresh.example');
    expect(entry.url).toBe('http://refresh.example/page');
    expect(entry.flags & UrlFlag.Recrawl).toBe(UrlFlag.Recrawl);
    const state = await runtime.db.pool.query(`SELECT state FROM "${namespace}".urls WHERE url_hash = $1`, [hash]);
    expect(state.rows[0].state).toBe('queued');
    // A lower priority is a lower band.
    const low = await call('POST', `/v1/crawl/urls/${hash.toString('hex')}/refresh`, { body: { priority: 0 } });
    expect(low.status).toBe(202);
  });

  it('404 for an unknown hash; 400 for a malformed hash or body', async () => {
    const unknown = await call('POST', `/v1/crawl/urls/${'ab'.repeat(16)}/refresh`);
    expect(unknown.status).toBe(404);
    expect((await call('POST', '/v1/crawl/urls/xyz/refresh')).status).toBe(400);
    expect((await call('POST', `/v1/crawl/urls/${'AB'.repeat(16)}/refresh`)).status).toBe(400);
    const badBody = await call('POST', `/v1/crawl/urls/${'ab'.repeat(16)}/refresh`, { body: { priority: 5 } });
    expect(badBody.status).toBe(400);
    expect(badBody.body.error.details[0]).toMatch(/^body\.priority/);
  });
});

describe('pause and resume', () => {
  it('pauses one host in the frontier and in PostgreSQL, and resumes it', async () => {
    const res = await call('POST', '/v1/crawl/domains/rules.example/pause');
    expect(res).toMatchObject({ status: 200, body: { host: 'rules.example', paused: true } });
    expect(await runtime.frontier.isPaused('rules.example')).toBe(true);
    const rows = await runtime.db.pool.query(`SELECT host, paused_by FROM "${namespace}".paused_hosts`);
    expect(rows.rows).toEqual([{ host: 'rules.example', paused_by: expect.stringMatching(/^tok:[0-9a-f]{8}$/) }]);
    expect((await call('GET', '/v1/crawl/domains/rules.example/status')).body.paused).toBe(true);
    expect((await call('GET', '/v1/crawl/paused')).body).toMatchObject({ all: false, hosts: [{ host: 'rules.example' }] });
    // The dispatcher claims nothing of it.
    const claim = await runtime.frontier.claim(0, 1000, { leadMs: 10_000 });
    expect(claim.leases.filter((l) => l.host === 'rules.example')).toEqual([]);
    expect((await call('POST', '/v1/crawl/domains/rules.example/resume')).body).toEqual({ host: 'rules.example', paused: false });
    expect(await runtime.frontier.isPaused('rules.example')).toBe(false);
    expect((await runtime.db.pool.query(`SELECT 1 FROM "${namespace}".paused_hosts`)).rowCount).toBe(0);
  });

  it('pauses and resumes the whole crawl', async () => {
    const paused = await call('POST', '/v1/crawl/pause');
    expect(paused).toMatchObject({ status: 200, body: { all: true } });
    expect((await runtime.frontier.claim(0, 10)).paused).toBe(true);
    expect((await call('GET', '/v1/crawl/stats')).body.paused.all).toBe(true);
    expect((await call('POST', '/v1/crawl/resume')).body.all).toBe(false);
    expect((await runtime.frontier.claim(0, 0)).paused).toBeUndefined();
  });

  it('a pause outlives Redis: a new dashboard restores it from PostgreSQL', async () => {
    await call('POST', '/v1/crawl/domains/kept.example/pause');
    await runtime.redis.del(`${namespace}:{p0}:paused`);
    expect(await runtime.frontier.isPaused('kept.example')).toBe(false);
    const logs2 = new LogCapture();
    const second = await openRuntime(namespace, { TRAWL_METRICS_OPEN: 'true' }, logs2);
    const other = await startDashboard(second, { host: '127.0.0.1', port: 0 });
    try {
      expect(await runtime.frontier.isPaused('kept.example')).toBe(true);
      // TRAWL_METRICS_OPEN: /metrics without a token, nothing else.
      const metrics = await fetch(`${other.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toMatch(/^trawl_frontier_queued_urls\{namespace="t_dashapi_\w+",role="dashboard"\} \d+$/m);
      expect((await fetch(`${other.url}/v1/crawl/stats`)).status).toBe(401);
    } finally {
      await other.close();
      await second.close();
    }
    await call('POST', '/v1/crawl/domains/kept.example/resume');
  });
});

describe('statistics, freshness, OpenAPI, metrics', () => {
  it('GET /v1/crawl/stats: frontier, rate against capacity, queues, counters', async () => {
    const res = await call('GET', '/v1/crawl/stats');
    expect(res.status).toBe(200);
    expect(res.body.namespace).toBe(namespace);
    expect(res.body.frontier.queued).toBeGreaterThan(0);
    expect(res.body.frontier.oldestQueuedAgeS).toBeGreaterThanOrEqual(0);
    expect(res.body.frontier.processBacklog).toBe(0);
    expect(res.body.frontier.processOldestAgeS).toBeNull();
    expect(res.body.frontier.renderBacklog).toBe(0);
    expect(res.body.frontier.renderOldestAgeS).toBeNull();
    expect(res.body.queues.map((q: { name: string }) => q.name).sort()).toEqual(['fetch-p0', 'render', 'seeds', 'sweeps']);
    expect(res.body.rate.politeCapacityPerSecond).toBeGreaterThan(0);
    expect(res.body.rate.hostsSampled).toBeGreaterThan(0);
    expect(res.body.topHosts.length).toBeGreaterThan(0);
    expect(res.body.counters).toHaveProperty('fetched');
  });

  it('GET /v1/crawl/stats lists the live worker processes and their partitions', async () => {
    const member = `test-worker-${process.pid}`;
    const membership = new WorkerMembership(runtime.redis, { namespace, partitions: 1, memberId: member, heartbeatTtlMs: 3000 }, runtime.clock, runtime.logger, () => undefined);
    await membership.start();
    try {
      // The snapshot is cached for a moment: wait for one taken after the worker joined.
      let listed: { member: string; partitions: number[] }[] = [];
      for (let tries = 0; tries < 40 && !listed.some((w) => w.member === member); tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        listed = (await call('GET', '/v1/crawl/stats')).body.workerProcesses;
      }
      expect(listed).toContainEqual({ member, partitions: [0] });
    } finally {
      await membership.stop();
    }
  });

  it('GET /v1/crawl/freshness, for all hosts or one; 400 for a bad query', async () => {
    const all = await call('GET', '/v1/crawl/freshness');
    expect(all.status).toBe(200);
    expect(all.body.total).toMatchObject({ host: null, recrawls: 0, deadlineMissRate: null });
    const one = await call('GET', '/v1/crawl/freshness?host=rules.example&grace_s=60');
    expect(one.body.total.host).toBe('rules.example');
    expect((await call('GET', '/v1/crawl/freshness?grace_s=-1')).status).toBe(400);
    expect((await call('GET', '/v1/crawl/freshness?host=UPPER')).status).toBe(400);
  });

  it('serves the OpenAPI 3.1 document generated from the route schemas, and its reference page', async () => {
    const res = await call('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(Object.keys(res.body.paths).sort()).toEqual([
      '/v1/crawl/domains/{host}/fetches',
      '/v1/crawl/domains/{host}/pause',
      '/v1/crawl/domains/{host}/render',
      '/v1/crawl/domains/{host}/resume',
      '/v1/crawl/domains/{host}/status',
      '/v1/crawl/freshness',
      '/v1/crawl/pause',
      '/v1/crawl/paused',
      '/v1/crawl/resume',
      '/v1/crawl/seeds',
      '/v1/crawl/stats',
      '/v1/crawl/urls/{url_hash}/refresh',
    ]);
    const seeds = res.body.paths['/v1/crawl/seeds'].post;
    const ref = (schema: { $ref?: string }) => (schema.$ref ? res.body.components.schemas[schema.$ref.split('/').pop() as string] : schema);
    expect(ref(seeds.requestBody.content['application/json'].schema).properties.urls.type).toBe('array');
    expect(ref(seeds.responses['202'].content['application/json'].schema).required).toEqual(['enqueued', 'already_seen', 'request_id']);
    expect(Object.keys(seeds.responses)).toEqual(expect.arrayContaining(['202', '400', '401', '413', '422', '429']));
    expect(seeds.parameters.map((p: { name: string }) => p.name)).toContain('Idempotency-Key');
    // Every reference resolves inside the document.
    for (const [, ref] of JSON.stringify(res.body).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) expect(res.body.components.schemas).toHaveProperty(ref as string);
    const docs = await fetch(`${base}/v1/docs`, { headers: auth() });
    const html = await docs.text();
    expect(html).toContain('/v1/crawl/domains/{host}/status');
    expect(html).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)[a-z]/i);
  });

  it('serves /metrics with a token', async () => {
    const res = await fetch(`${base}/metrics`, { headers: auth() });
    expect(res.status).toBe(200);
    const text = await res.text();
    for (const series of ['trawl_frontier_queued_urls', 'trawl_process_backlog_pages', 'trawl_process_backlog_oldest_age_seconds', 'trawl_render_backlog_jobs', 'trawl_render_backlog_oldest_age_seconds', 'trawl_polite_capacity_fetches_per_second', 'trawl_queue_jobs{', 'trawl_hosts{', 'trawl_dead_letters', 'trawl_host_queued_urls{', 'process_cpu_seconds_total']) expect(text).toContain(series);
    expect(text).not.toMatch(/trawl_\w+\{[^}]*url=/);
    // Every series the Grafana dashboard queries exists: the crawl-wide ones here, the per-process
    // ones (the pipeline's events, the fetch-lateness histogram) in a worker's own /metrics.
    const worker = await serveProcessMetrics(runtime, 'worker');
    // A host the fetch stage judged blocked is counted by the tier that refused it and the action.
    runtime.tellBlocked({ host: 'walled.example', tier: 'direct', action: 'escalated', reason: 'blocked: 3 refusals in a row', toTier: 'dc' });
    const workerText = await worker.metrics.text();
    await worker.close();
    const fromWorkers = ['trawl_pipeline_events_total', 'trawl_fetch_lateness_seconds_bucket'];
    const grafana = readFileSync(join(REPO_ROOT, 'deploy/grafana/dashboards/trawl.json'), 'utf8');
    const queried = new Set([...grafana.matchAll(/\b((?:trawl|process)_[a-z_]+)\b/g)].map((m) => m[1] as string));
    expect(queried.size).toBeGreaterThan(15);
    // The render workers' panels: their backlog and its age, crawl-wide, and the render events per process.
    for (const name of ['trawl_render_backlog_jobs', 'trawl_render_backlog_oldest_age_seconds']) expect([...queried]).toContain(name);
    for (const event of ['rendered', 'renderFailed', 'renderHandedOver', 'renderNoWorker', 'renderLeaseLost']) expect(grafana).toMatch(new RegExp(`event=~\\\\"[^"]*\\b${event}\\b`));
    expect([...queried].filter((name) => fromWorkers.includes(name)).sort()).toEqual([...fromWorkers].sort());
    for (const name of queried) if (!fromWorkers.includes(name)) expect(text, name).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    expect(workerText).toMatch(/^# TYPE trawl_pipeline_events_total counter$/m);
    expect(workerText).toMatch(/^# TYPE trawl_fetch_lateness_seconds histogram$/m);
    expect(workerText).toMatch(/^trawl_fetch_lateness_seconds_bucket\{[^}]*le="\+Inf"/m);
    expect(workerText).toMatch(/^trawl_host_blocked_total\{[^}]*tier="direct",action="escalated"[^}]*\} 1$/m);
  });
});

describe('bull-board', () => {
  it('lists every queue of the namespace and serves its UI without outside resources', async () => {
    const queues = await call('GET', '/queues/api/queues');
    expect(queues.status).toBe(200);
    expect(queues.body.queues.map((q: { name: string }) => q.name).sort()).toEqual(['fetch-p0', 'render', 'seeds', 'sweeps']);
    const page = await fetch(`${base}/queues/`, { headers: auth() });
    expect(page.status).toBe(200);
    expect(await page.text()).not.toContain('googleapis');
  });

  it('refuses a malformed seeds job from the add form', async () => {
    const res = await call('POST', '/queues/api/queues/seeds/add', { body: { name: 'seeds', data: { url: 'x' }, options: {} } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(res.body)).toMatch(/invalid seeds job/);
  });

  it('"Retry all" gives every dead-lettered fetch job a fresh lease id too', async () => {
    const queues = new FetchQueues(runtime.redis, { namespace, partitions: 1, attempts: 1 });
    const blocking = createRedis(REDIS_URL, { blocking: true });
    const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 2, stalledMs: 5000, jobs: queues.options }, async () => ({ outcome: 'dead', reason: 'ERR_FETCH_TIMEOUT: gave up' }));
    void worker.run();
    try {
      await queues.addLeased(0, ['p0-801', 'p0-802'].map((l) => decodeFetchJob({ u: `http://dead.example/${l}`, h: 'dead.example', p: 0, d: 0, x: 0, f: 0, b: 0, l })));
      const end = Date.now() + 10_000;
      while (((await queues.counts()).failed ?? 0) < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      await worker.close();
      const retry = await call('PUT', '/queues/api/queues/fetch-p0/retry/failed');
      expect(retry.status).toBe(200);
      for (const id of ['p0-801', 'p0-802']) {
        const job = await queues.queue(0).getJob(id);
        expect(await job?.getState()).toBe('waiting');
        expect(job?.data.l).toMatch(/^r-/);
      }
      await queues.queue(0).drain();
    } finally {
      await worker.close();
      blocking.disconnect();
      await queues.close();
    }
  });

  it('retries a dead-lettered fetch job with a fresh, explicit lease id', async () => {
    const queues = new FetchQueues(runtime.redis, { namespace, partitions: 1, attempts: 1 });
    const blocking = createRedis(REDIS_URL, { blocking: true });
    const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 1, stalledMs: 5000, jobs: queues.options }, async () => ({ outcome: 'dead', reason: 'ERR_HTTP_5XX: HTTP 500' }));
    void worker.run();
    try {
      await queues.addLeased(0, [decodeFetchJob({ u: 'http://dead.example/x', h: 'dead.example', p: 0, d: 0, x: 0, f: 0, b: 0, l: 'p0-900' })]);
      const end = Date.now() + 10_000;
      while ((await queues.counts()).failed !== 1 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      await worker.close();
      // The statistics are cached for 2 s.
      let stats = await call('GET', '/v1/crawl/stats');
      for (let i = 0; i < 30 && stats.body.deadLetters.count === 0; i += 1) {
        await new Promise((r) => setTimeout(r, 200));
        stats = await call('GET', '/v1/crawl/stats');
      }
      expect(stats.body.deadLetters).toMatchObject({ count: 1, topReasons: [{ reason: 'ERR_HTTP_5XX', count: 1 }] });
      const retry = await call('PUT', '/queues/api/queues/fetch-p0/p0-900/retry');
      expect(retry.status).toBe(204);
      const job = await queues.queue(0).getJob('p0-900');
      expect(await job?.getState()).toBe('waiting');
      expect(job?.data.l).toMatch(/^r-[0-9a-f-]{36}$/);
      expect(job?.attemptsMade).toBe(0);
    } finally {
      await worker.close();
      blocking.disconnect();
      await queues.close();
    }
  });
});

describe('starting', () => {
  it('refuses to listen off loopback without a token; on loopback it makes one and writes it to a 0600 file', async () => {
    const logs3 = new LogCapture();
    const dir = mkdtempSync(join(tmpdir(), 'trawl-dash-'));
    const tokenFile = join(dir, 'sub', 'dashboard.token');
    const open = await openRuntime(namespace, { TRAWL_API_TOKENS: '', TRAWL_DASHBOARD_TOKEN_FILE: tokenFile }, logs3);
    try {
      await expect(startDashboard(open, { host: '0.0.0.0', port: 0 })).rejects.toThrow(/TRAWL_API_TOKENS .*not a loopback address/);
      const local = await startDashboard(open, { host: '127.0.0.1', port: 0 });
      try {
        expect(local.tokenFile).toBe(tokenFile);
        expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
        const generated = readFileSync(tokenFile, 'utf8').trim();
        expect(generated.length).toBeGreaterThanOrEqual(32);
        expect((await fetch(`${local.url}/v1/crawl/paused`)).status).toBe(401);
        expect((await fetch(`${local.url}/v1/crawl/paused`, { headers: { authorization: `Bearer ${generated}` } })).status).toBe(200);
        expect((await fetch(`${local.url}/v1/crawl/paused`, authInit())).status).toBe(401); // the configured tokens are not these
        expect(logs3.text).toContain(tokenFile);
        expect(logs3.text).not.toContain(generated);
      } finally {
        await local.close();
      }
    } finally {
      await open.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serves bull-board at /queues with or without the trailing slash', async () => {
    for (const path of ['/queues', '/queues/']) {
      const res = await fetch(`${base}${path}`, { ...authInit(), redirect: 'manual' });
      expect([200, 301, 302], path).toContain(res.status);
    }
  });
});

describe('rate limiting', () => {
  it('answers 429 once a token has made more requests in a minute than allowed; other tokens go on', async () => {
    let limited: Awaited<ReturnType<typeof call>> | null = null;
    for (let i = 0; i < 200 && !limited; i += 1) {
      const res = await call('GET', '/v1/crawl/paused', { token: TOKEN_C });
      if (res.status === 429) limited = res;
    }
    expect(limited?.body.error.code).toBe('ERR_RATE_LIMITED');
    expect(limited?.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await call('GET', '/v1/crawl/paused', { token: TOKEN_A })).status).toBe(200);
    expect((await call('GET', '/healthz', { token: null })).status).toBe(200);
  });
});

void DATABASE_URL;
