import { once } from 'node:events';
import type { LookupFunction } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DnsCache } from './dns-cache.js';
import { closeAll, makeFetcher, startServer, type TestServer } from './servers.test-helpers.js';

afterEach(closeAll);

/** One small site per case, declared as data: path → status, headers, body. */
type Page = { status: number; headers?: Record<string, string>; body?: string | Buffer };

async function site(pages: Record<string, Page | ((server: TestServer) => Page)>): Promise<TestServer> {
  const server: TestServer = await startServer((req, res) => {
    const entry = pages[req.url ?? ''];
    const page = typeof entry === 'function' ? entry(server) : (entry ?? { status: 404, body: 'not found' });
    res.writeHead(page.status, { 'content-type': 'text/plain', ...page.headers });
    res.end(page.body ?? '');
  });
  return server;
}

const redirect = (status: number, location: string): Page => ({ status, headers: { location } });

describe('Fetcher.fetchRobots', () => {
  it('returns a 200 with its body', async () => {
    const server = await site({ '/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /private\n' } });
    const result = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toEqual({
      kind: 'response',
      status: 200,
      body: Buffer.from('User-agent: *\nDisallow: /private\n'),
      finalUrl: `${server.origin}/robots.txt`,
      redirects: 0,
      truncated: false,
    });
  });

  it.each([404, 410, 401, 500, 503])('returns a %i as a response (the caller applies RFC 9309)', async (status) => {
    const server = await site({ '/robots.txt': { status, body: 'nope' } });
    const result = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toMatchObject({ kind: 'response', status, redirects: 0 });
  });

  it('follows redirects itself, resolving relative Locations, each 301/302/303/307/308', async () => {
    const server = await site({
      '/robots.txt': redirect(301, '/a/robots.txt'),
      '/a/robots.txt': redirect(302, 'b.txt'),
      '/a/b.txt': redirect(303, '../c.txt'),
      '/c.txt': redirect(307, '/d.txt?x=1'),
      '/d.txt?x=1': (s) => redirect(308, `${s.origin}/final.txt`),
      '/final.txt': { status: 200, body: 'User-agent: *\nAllow: /\n' },
    });
    const result = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toMatchObject({ kind: 'response', status: 200, redirects: 5, finalUrl: `${server.origin}/final.txt` });
    expect(server.requests.map((r) => r.url)).toEqual(['/robots.txt', '/a/robots.txt', '/a/b.txt', '/c.txt', '/d.txt?x=1', '/final.txt']);
  });

  it('waits the politeness delay before each hop (every hop is a request to the host)', async () => {
    const server = await site({ '/robots.txt': redirect(301, '/a.txt'), '/a.txt': redirect(302, '/b.txt'), '/b.txt': { status: 200, body: '' } });
    const started = Date.now();
    const result = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`, { hopDelayMs: 150 });
    expect(result).toMatchObject({ kind: 'response', status: 200, redirects: 2 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('a redirect loop stops at maxRedirects and returns the 3xx', async () => {
    const server = await site({ '/robots.txt': redirect(301, '/loop.txt'), '/loop.txt': redirect(302, '/robots.txt') });
    const result = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toMatchObject({ kind: 'response', status: 302, redirects: 5, finalUrl: `${server.origin}/loop.txt` });
    expect(server.requests).toHaveLength(6);

    const capped = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`, { maxRedirects: 1 });
    expect(capped).toMatchObject({ kind: 'response', status: 302, redirects: 1, finalUrl: `${server.origin}/loop.txt` });

    const none = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`, { maxRedirects: 0 });
    expect(none).toMatchObject({ kind: 'response', status: 301, redirects: 0 });
  });

  it('a 3xx without a Location (or with a 304) is the final response', async () => {
    const server = await site({ '/robots.txt': { status: 302 }, '/nm.txt': { status: 304, headers: { location: '/x' } } });
    expect(await makeFetcher().fetchRobots(`${server.origin}/robots.txt`)).toMatchObject({ kind: 'response', status: 302, redirects: 0 });
    expect(await makeFetcher().fetchRobots(`${server.origin}/nm.txt`)).toMatchObject({ kind: 'response', status: 304, redirects: 0 });
  });

  it('reads at most maxBytes (default 500 KiB)', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, '#');
    const server = await site({ '/robots.txt': { status: 200, body: big } });
    const result = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toMatchObject({ kind: 'response', status: 200, truncated: true });
    expect(result.kind === 'response' && result.body.length).toBe(500 * 1024);
    const small = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`, { maxBytes: 1000 });
    expect(small.kind === 'response' && small.body.length).toBe(1000);
  });

  it('each hop goes through the SSRF guard: a redirect to the metadata service is an error', async () => {
    const server = await site({ '/robots.txt': redirect(302, 'http://169.254.169.254/latest/meta-data/') });
    const result = await makeFetcher().fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toMatchObject({ kind: 'error', code: 'ERR_SSRF_BLOCKED', action: 'skip' });
    expect(result.kind === 'error' && result.message).toMatch(/cloud-metadata/);
  });

  it('each hop goes through the guarded lookup: a redirect to a name resolving to 10.0.0.1 is an error', async () => {
    const server = await site({ '/robots.txt': (s) => redirect(301, `http://internal.test:${s.port}/robots.txt`) });
    const lookup = ((_host: string, _options: unknown, callback: (...args: unknown[]) => void) =>
      callback(null, [{ address: '10.0.0.1', family: 4 }])) as unknown as LookupFunction;
    // The origin itself is an IP literal (no lookup); the hop is a name.
    const result = await makeFetcher({ lookup }).fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toMatchObject({ kind: 'error', code: 'ERR_SSRF_BLOCKED' });
  });

  it('maps DNS failures: NXDOMAIN on a hop is an error with action skip', async () => {
    const server = await site({ '/robots.txt': redirect(301, 'http://gone.test/robots.txt') });
    const dns = new DnsCache({
      resolver: {
        resolve4: async () => Promise.reject(Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' })),
        resolve6: async () => Promise.reject(Object.assign(new Error('queryAaaa ENOTFOUND'), { code: 'ENOTFOUND' })),
      },
    });
    const result = await makeFetcher({ dns }).fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toMatchObject({ kind: 'error', code: 'ERR_FETCH_NETWORK', action: 'skip' });
    expect(result.kind === 'error' && result.message).toMatch(/ENOTFOUND/);
  });

  it('maps a first-byte timeout to an error', async () => {
    const server = await startServer(() => undefined);
    const fetcher = makeFetcher({ timeouts: { connectMs: 1_000, firstByteMs: 200, idleMs: 5_000, totalMs: 5_000 } });
    const result = await fetcher.fetchRobots(`${server.origin}/robots.txt`);
    expect(result).toMatchObject({ kind: 'error', code: 'ERR_FETCH_TIMEOUT', action: 'retry' });
  });

  it('maps connection refused and reset to errors', async () => {
    const refused = await startServer(() => undefined);
    refused.server.close();
    await once(refused.server, 'close');
    expect(await makeFetcher().fetchRobots(`${refused.origin}/robots.txt`)).toMatchObject({
      kind: 'error',
      code: 'ERR_FETCH_NETWORK',
      message: expect.stringMatching(/ECONNREFUSED/),
    });

    const reset = await startServer((_req, res) => {
      res.writeHead(200, { 'content-length': '5000' });
      res.write('User-agent: *\n', () => res.socket?.destroy());
    });
    expect(await makeFetcher().fetchRobots(`${reset.origin}/robots.txt`)).toMatchObject({ kind: 'error', code: 'ERR_FETCH_NETWORK' });
  });

  it('a redirect to a non-HTTP scheme is an error', async () => {
    const server = await site({ '/robots.txt': redirect(301, 'ftp://files.example/robots.txt') });
    expect(await makeFetcher().fetchRobots(`${server.origin}/robots.txt`)).toMatchObject({ kind: 'error', code: 'ERR_URL_SCHEME' });
  });

  it('never throws: a bad URL, a caller abort, a closed fetcher, bad options', async () => {
    const fetcher = makeFetcher();
    expect(await fetcher.fetchRobots('not a url')).toMatchObject({ kind: 'error', code: 'ERR_URL_INVALID' });
    expect(await fetcher.fetchRobots('http://x.test/robots.txt', { maxBytes: 0 })).toMatchObject({ kind: 'error', code: 'ERR_CONFIG_INVALID' });

    const server = await startServer(() => undefined);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect(await fetcher.fetchRobots(`${server.origin}/robots.txt`, { signal: controller.signal })).toMatchObject({
      kind: 'error',
      code: 'ERR_FETCH_NETWORK',
      action: 'retry',
    });

    fetcher.close();
    expect(await fetcher.fetchRobots(`${server.origin}/robots.txt`)).toMatchObject({ kind: 'error', code: 'ERR_FETCH_NETWORK' });
  });
});
