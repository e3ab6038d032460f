import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { Runtime } from '@trawl/runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { validateBoardJob } from '../src/board.js';
import { type DashboardServer, startDashboard } from '../src/index.js';
import { dropNamespace, LogCapture, openRuntime, TOKEN_A, TOKEN_B, uniqueNamespace } from './helpers.js';

// The security review's findings against the dashboard, each against a real server on port 0 with
// real Redis and PostgreSQL: lockouts, proxies, timeouts, sessions, read-only tokens, Host checks.
const namespace = uniqueNamespace('dashsec');
const opened: { runtime: Runtime; server: DashboardServer }[] = [];

/** A dashboard of its own settings (each on its own runtime, all in one namespace). */
async function dashboard(env: Record<string, string> = {}): Promise<DashboardServer> {
  const runtime = await openRuntime(namespace, env, new LogCapture());
  const server = await startDashboard(runtime, { host: '127.0.0.1', port: 0 });
  opened.push({ runtime, server });
  return server;
}

afterAll(async () => {
  for (const { runtime, server } of opened) {
    await server.close();
    await runtime.close();
  }
  await dropNamespace(namespace);
});

const bearer = (token: string, extra: Record<string, string> = {}) => ({ headers: { authorization: `Bearer ${token}`, ...extra } });
const form = { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' };

async function signIn(base: string, token: string, headers: Record<string, string> = {}): Promise<{ cookie: string; setCookie: string }> {
  const res = await fetch(`${base}/signin`, { method: 'POST', headers: { ...form, ...headers }, body: `token=${encodeURIComponent(token)}`, redirect: 'manual' });
  expect(res.status).toBe(303);
  const setCookie = res.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0] as string, setCookie };
}

describe('the failed-authentication lockout', () => {
  it('refuses only wrong credentials: after 30 failures from an address its valid token and session still get in', async () => {
    const server = await dashboard();
    const { cookie } = await signIn(server.url, TOKEN_B);
    // The count is per minute: should one end during the loop, the count starts again.
    const statuses: number[] = [];
    for (let i = 0; i < 70 && statuses.at(-1) !== 429; i += 1) statuses.push((await fetch(`${server.url}/v1/crawl/paused`, bearer(`wrong-token-${i}-xxxxxxxxxxxx`))).status);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(30);
    expect((await fetch(`${server.url}/v1/crawl/paused`, bearer(TOKEN_A))).status).toBe(200);
    expect((await fetch(`${server.url}/v1/crawl/paused`, { headers: { cookie } })).status).toBe(200);
    // A sign-in with a valid token works too; a wrong one is still refused.
    await signIn(server.url, TOKEN_A);
    const wrong = await fetch(`${server.url}/signin`, { method: 'POST', headers: form, body: 'token=not-a-valid-token-at-all', redirect: 'manual' });
    expect(wrong.status).toBe(429);
  });

  it('counts a trusted proxy\'s clients by their forwarded address (TRAWL_TRUST_PROXY), one client\'s failures never another\'s', async () => {
    const server = await dashboard({ TRAWL_TRUST_PROXY: '127.0.0.1' });
    const from = (ip: string) => ({ 'x-forwarded-for': ip });
    for (let i = 0; i < 31; i += 1) await fetch(`${server.url}/v1/crawl/paused`, bearer(`wrong-token-${i}-xxxxxxxxxxxx`, from('203.0.113.9')));
    expect((await fetch(`${server.url}/v1/crawl/paused`, bearer('wrong-token-again-xxxxxxxx', from('203.0.113.9')))).status).toBe(429);
    expect((await fetch(`${server.url}/v1/crawl/paused`, bearer('wrong-token-other-xxxxxxxx', from('203.0.113.10')))).status).toBe(401);
  });
});

describe('the session cookie behind a TLS proxy', () => {
  it('is Secure when a trusted proxy forwards https, and only then', async () => {
    const trusting = await dashboard({ TRAWL_TRUST_PROXY: 'true' });
    expect((await signIn(trusting.url, TOKEN_A, { 'x-forwarded-proto': 'https' })).setCookie).toMatch(/;\s*Secure/i);
    expect((await signIn(trusting.url, TOKEN_A)).setCookie).not.toMatch(/;\s*Secure/i);
    const direct = await dashboard();
    expect((await signIn(direct.url, TOKEN_A, { 'x-forwarded-proto': 'https' })).setCookie).not.toMatch(/;\s*Secure/i);
  });
});

describe('slow clients', () => {
  /** Sends a request's headers, then its body a byte every `everyMs`; resolves when the server closes (or after `giveUpMs`). */
  function trickle(url: string, headers: string, everyMs: number, giveUpMs: number): Promise<{ closedAfterMs: number; answer: string }> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve) => {
      const started = Date.now();
      let answer = '';
      const socket = connect(Number(port), hostname, () => socket.write(headers));
      const drip = setInterval(() => socket.write('t'), everyMs);
      const done = () => {
        clearInterval(drip);
        clearTimeout(giveUp);
        socket.destroy();
        resolve({ closedAfterMs: Date.now() - started, answer });
      };
      const giveUp = setTimeout(done, giveUpMs);
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', done);
      socket.on('error', done);
    });
  }

  it('cuts off a body sent a byte at a time once the request timeout passes (408), and headers that never end', async () => {
    const server = await dashboard({ TRAWL_API_HEADERS_TIMEOUT_MS: '400', TRAWL_API_REQUEST_TIMEOUT_MS: '1000' });
    const body = await trickle(server.url, 'POST /signin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n', 150, 8000);
    expect(body.closedAfterMs).toBeLessThan(4000);
    expect(body.answer).toMatch(/^HTTP\/1\.1 408/);
    const headers = await trickle(server.url, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n', 150, 8000);
    expect(headers.closedAfterMs).toBeLessThan(3000);
  });

  it('refuses a request timeout shorter than the headers timeout', async () => {
    await expect(dashboard({ TRAWL_API_HEADERS_TIMEOUT_MS: '2000', TRAWL_API_REQUEST_TIMEOUT_MS: '1000' })).rejects.toThrow(/TRAWL_API_REQUEST_TIMEOUT_MS/);
  });
});

describe('the rate limit', () => {
  it('covers the sign-in page too (and sign-out, registered with it)', async () => {
    // An address of this test alone (the limit's counts live in Redis, shared by this file's dashboards).
    const server = await dashboard({ TRAWL_API_RATE_LIMIT: '4', TRAWL_TRUST_PROXY: 'true' });
    const client = { 'x-forwarded-for': '198.51.100.7' };
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await fetch(`${server.url}/signin`, { headers: client })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const post = await fetch(`${server.url}/signin`, { method: 'POST', headers: { ...form, ...client }, body: `token=${TOKEN_A}`, redirect: 'manual' });
    expect(post.status).toBe(429);
  });
});

describe('writes through bull-board', () => {
  const api = (server: DashboardServer, method: string, path: string, body?: unknown) =>
    fetch(`${server.url}/queues/api/queues${path}`, { method, headers: { authorization: `Bearer ${TOKEN_A}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });

  it('validates every added or edited job with trawl\'s schemas: a fetch job\'s host must be its URL\'s; the sweeps take none', async () => {
    const server = await dashboard();
    const job = { u: 'http://open.example/page', h: 'open.example', p: 0, d: 0 };
    const lying = await api(server, 'POST', '/fetch-p0/add', { name: 'fetch', data: { ...job, h: 'paused.example' }, options: {} });
    expect(lying.status).toBe(400);
    expect(await lying.text()).toMatch(/invalid fetch job: h: must be the host of the URL/);
    expect((await api(server, 'POST', '/fetch-p0/add', { name: 'fetch', data: { u: 'x' }, options: {} })).status).toBe(400);
    expect(() => validateBoardJob('sweeps', {})).toThrow(/takes no job by hand/);
    // A valid job goes in, and editing it is validated the same way.
    const added = await api(server, 'POST', '/fetch-p0/add', { name: 'fetch', data: job, options: { jobId: 'by-hand-1', delay: 600_000 } });
    expect(added.status).toBe(200);
    const edit = await api(server, 'PATCH', '/fetch-p0/by-hand-1/update-data', { jobData: { ...job, u: 'http://paused.example/page' } });
    expect(edit.status).toBe(400);
    expect(await edit.text()).toMatch(/must be the host of the URL/);
    expect((await api(server, 'PATCH', '/fetch-p0/by-hand-1/update-data', { jobData: { ...job, d: 1 } })).status).toBe(200);
    const seedsEdit = await api(server, 'POST', '/seeds/add', { name: 'seeds', data: { urls: ['http://board.example/'] }, options: { jobId: 'seed-by-hand', delay: 600_000 } });
    expect(seedsEdit.status).toBe(200);
    expect((await api(server, 'PATCH', '/seeds/seed-by-hand/update-data', { jobData: { urls: 'not a list' } })).status).toBe(400);
  });

  it('answers an internal failure without its message', async () => {
    const server = await dashboard();
    // BullMQ throws on a job id that is an integer: its message is BullMQ's, not the client's business.
    const res = await api(server, 'POST', '/seeds/add', { name: 'seeds', data: { urls: ['http://a.example/'] }, options: { jobId: '123' } });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: { key: 'ERRORS.INTERNAL_SERVER_ERROR' }, message: 'internal error (logged)' });
  });
});

describe('sessions on the server', () => {
  const csrfOf = async (base: string, cookie: string) => /name="csrf-token" content="([^"]+)"/.exec(await (await fetch(`${base}/`, { headers: { cookie } })).text())?.[1] as string;
  const signOut = async (base: string, cookie: string, path = '/signout') =>
    fetch(`${base}${path}`, { method: 'POST', headers: { ...form, cookie }, body: `_csrf=${await csrfOf(base, cookie)}`, redirect: 'manual' });
  const works = async (base: string, cookie: string) => (await fetch(`${base}/v1/crawl/paused`, { headers: { cookie } })).status === 200;

  it('signing out ends the session on the server: a copy of the cookie stops working', async () => {
    const server = await dashboard();
    const { cookie } = await signIn(server.url, TOKEN_B);
    const other = await signIn(server.url, TOKEN_B);
    expect(await works(server.url, cookie)).toBe(true);
    expect((await signOut(server.url, cookie)).status).toBe(303);
    expect(await works(server.url, cookie)).toBe(false);
    expect(await works(server.url, other.cookie)).toBe(true);
  });

  it('signing out everywhere ends every session of the token, on every dashboard of the namespace, and no other token\'s', async () => {
    const server = await dashboard();
    const replica = await dashboard();
    const here = await signIn(server.url, TOKEN_A);
    const there = await signIn(replica.url, TOKEN_A);
    const otherToken = await signIn(server.url, TOKEN_B);
    expect(await works(replica.url, here.cookie)).toBe(true);
    expect((await signOut(server.url, here.cookie, '/signout/everywhere')).status).toBe(303);
    expect(await works(server.url, here.cookie)).toBe(false);
    expect(await works(replica.url, there.cookie)).toBe(false);
    expect(await works(server.url, otherToken.cookie)).toBe(true);
    // With the token itself (a lost laptop's session, ended from a script).
    const again = await signIn(server.url, TOKEN_A);
    const res = await fetch(`${server.url}/signout/everywhere`, { method: 'POST', ...bearer(TOKEN_A) });
    expect(await res.json()).toEqual({ closed: 1 });
    expect(await works(server.url, again.cookie)).toBe(false);
  });
});

describe('read-only tokens', () => {
  const READER = `reader-${TOKEN_A.slice(6)}`;

  it('GET everything, /metrics included, but never write: the API, bull-board and a browser session alike', async () => {
    const server = await dashboard({ TRAWL_API_READ_TOKENS: READER });
    const as = (method: string, path: string, token = READER) => fetch(`${server.url}${path}`, { method, ...bearer(token, method === 'GET' ? {} : { 'content-type': 'application/json' }), body: method === 'GET' ? undefined : '{}' });
    for (const path of ['/v1/crawl/paused', '/v1/crawl/stats', '/metrics', '/queues/api/queues']) expect((await as('GET', path)).status, path).toBe(200);
    for (const [method, path] of [['POST', '/v1/crawl/pause'], ['POST', '/v1/crawl/domains/r.example/pause'], ['POST', '/v1/crawl/seeds'], ['PUT', '/queues/api/queues/seeds/retry/failed'], ['PUT', '/queues/api/queues/pause']] as const) {
      const res = await as(method, path);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(JSON.stringify(await res.json())).toMatch(/ERR_READ_ONLY|read-only/);
    }
    expect((await as('POST', '/v1/crawl/domains/w.example/pause', TOKEN_A)).status).toBe(200);
    expect((await as('POST', '/v1/crawl/domains/w.example/resume', TOKEN_A)).status).toBe(200);
    // Signed in with it: pages yes, writes no, signing out yes.
    const { cookie } = await signIn(server.url, READER);
    const page = await (await fetch(`${server.url}/`, { headers: { cookie } })).text();
    const csrf = /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] as string;
    const write = await fetch(`${server.url}/v1/crawl/pause`, { method: 'POST', headers: { cookie, 'sec-fetch-site': 'same-origin', 'x-csrf-token': csrf } });
    expect(write.status).toBe(403);
    const out = await fetch(`${server.url}/signout`, { method: 'POST', headers: { ...form, cookie }, body: `_csrf=${csrf}`, redirect: 'manual' });
    expect(out.status).toBe(303);
  });
});

describe('hosts in the API', () => {
  it('accepts any host the crawler accepts: quotes, braces and $ in a name, and names longer than 100 characters', async () => {
    const server = await dashboard();
    const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.example`;
    for (const host of [`q"'{}$.example`, long, '127.0.0.9:8080']) {
      const path = `/v1/crawl/domains/${encodeURIComponent(host)}`;
      const pause = await fetch(`${server.url}${path}/pause`, { method: 'POST', ...bearer(TOKEN_A) });
      expect(pause.status, host).toBe(200);
      expect(await pause.json()).toEqual({ host, paused: true });
      expect((await fetch(`${server.url}${path}/status`, bearer(TOKEN_A))).status, host).not.toBe(400);
      expect((await fetch(`${server.url}${path}/resume`, { method: 'POST', ...bearer(TOKEN_A) })).status, host).toBe(200);
    }
    // What the crawler would never write as a host is still refused.
    for (const host of ['UPPER.example', 'a b.example', 'user@a.example', 'a.example:80', 'a.example.']) {
      expect((await fetch(`${server.url}/v1/crawl/domains/${encodeURIComponent(host)}/status`, bearer(TOKEN_A))).status, host).toBe(400);
    }
  });
});

describe('seeds requests', () => {
  it('refuses more URLs than TRAWL_API_MAX_SEEDS in one request (413, nothing applied)', async () => {
    const server = await dashboard({ TRAWL_API_MAX_SEEDS: '5' });
    const post = (n: number) =>
      fetch(`${server.url}/v1/crawl/seeds`, { method: 'POST', ...bearer(TOKEN_A, { 'content-type': 'application/json' }), body: JSON.stringify({ urls: Array.from({ length: n }, (_, i) => `http://cap.example/${i}`) }) });
    const over = await post(6);
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('ERR_TOO_MANY_SEEDS');
    const ok = await post(5);
    expect(ok.status).toBe(202);
    expect(((await ok.json()) as { enqueued: number }).enqueued).toBe(5);
  });
});

describe('the Host header (DNS rebinding)', () => {
  /** A request with a Host header of our choosing (fetch always sends the URL's). */
  function withHost(url: string, hostHeader: string, path = '/v1/crawl/paused'): Promise<number> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: hostname, port, path, headers: { host: hostHeader, authorization: `Bearer ${TOKEN_A}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('on loopback answers only loopback names by default; TRAWL_DASHBOARD_ALLOWED_HOSTS names others', async () => {
    const local = await dashboard();
    const port = new URL(local.url).port;
    expect(await withHost(local.url, `127.0.0.1:${port}`)).toBe(200);
    expect(await withHost(local.url, `localhost:${port}`)).toBe(200);
    expect(await withHost(local.url, `rebound.attacker.example:${port}`)).toBe(421);
    expect(await withHost(local.url, 'rebound.attacker.example', '/healthz')).toBe(200);
    const named = await dashboard({ TRAWL_DASHBOARD_ALLOWED_HOSTS: 'trawl.example.com' });
    expect(await withHost(named.url, 'Trawl.Example.com')).toBe(200);
    expect(await withHost(named.url, `127.0.0.1:${new URL(named.url).port}`)).toBe(421);
  });
});
