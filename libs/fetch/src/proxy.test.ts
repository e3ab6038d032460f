import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Fetcher } from './fetcher.js';
import type { ProxyRequestEvent } from './options.js';
import type { ProxyOptions } from './proxy-route.js';
import { closeAll, fetchError, makeFetcher, startServer, startTcpServer, type TestServer } from './servers.test-helpers.js';
import { deadPort, type ProxyServer, startMicrosocks, startSquid, stopProxies } from './testing/index.js';

// Real proxies (squid for HTTP CONNECT, microsocks for SOCKS5) in front of loopback test servers.

const PASSWORD = 'pr0xy-s3cret';
let squid: ProxyServer;
let squidAuth: ProxyServer;
let socks: ProxyServer;
let socksAuth: ProxyServer;
let web: TestServer;

beforeAll(async () => {
  [squid, squidAuth, socks, socksAuth] = await Promise.all([
    startSquid(),
    startSquid({ auth: { user: 'crawler', password: PASSWORD } }),
    startMicrosocks(),
    startMicrosocks({ auth: { user: 'crawler', password: PASSWORD } }),
  ]);
}, 60_000);
afterAll(stopProxies);
afterEach(closeAll);

/** Names `<anything>.test` resolve to 127.0.0.1: many hosts on one server, for sticky selection. */
const testLookup = ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
  if (!hostname.endsWith('.test')) callback(Object.assign(new Error(`lookup ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname, syscall: 'lookup' }));
  else if (hostname.startsWith('private.')) callback(null, options.all ? [{ address: '10.0.0.7', family: 4 }] : '10.0.0.7', 4);
  else callback(null, options.all ? [{ address: '127.0.0.1', family: 4 }] : '127.0.0.1', 4);
}) as unknown as LookupFunction;

const through = (proxies: Array<[string, string]>, extra: Partial<ProxyOptions> = {}): ProxyOptions => ({
  proxies: proxies.map(([name, url]) => ({ name, url })),
  ...extra,
});

async function startWeb(): Promise<TestServer> {
  return startServer((req, res) => {
    if (req.url === '/robots.txt') res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
    else res.writeHead(200, { 'content-type': 'text/html' }).end(`<p>page ${req.url}</p>`);
  });
}

/** Closes the fetcher's tunnels: squid logs a CONNECT when its tunnel closes. */
async function flush(fetcher: Fetcher): Promise<void> {
  fetcher.close();
  await new Promise((resolve) => setTimeout(resolve, 50));
}

describe('fetching through a proxy', () => {
  it('squid (HTTP CONNECT): the page arrives, the proxy logs the tunnel to the checked address', async () => {
    web = await startWeb();
    const fetcher = makeFetcher({ proxies: through([['sq', squid.url]]) });

    const result = await fetcher.fetch(`${web.origin}/a`);

    expect(result).toMatchObject({ status: 200, proxy: 'sq' });
    expect(result.body.toString()).toBe('<p>page /a</p>');
    // The socket's peer is the proxy, not the site: no address is claimed for the site.
    expect(result.wire?.remoteAddress).toBeNull();
    expect(web.requests.map((r) => r.url)).toEqual(['/a']);
    await flush(fetcher);
    expect(await squid.waitForLog(`CONNECT 127.0.0.1:${web.port}`)).toMatch(new RegExp(`TCP_TUNNEL/200 \\d+ CONNECT 127\\.0\\.0\\.1:${web.port}`));
  });

  it('microsocks (SOCKS5): the page arrives, the proxy logs the connection', async () => {
    web = await startWeb();
    const fetcher = makeFetcher({ proxies: through([['s5', socks.url]]) });

    const result = await fetcher.fetch(`${web.origin}/b`);

    expect(result).toMatchObject({ status: 200, proxy: 's5' });
    expect(web.requests.map((r) => r.url)).toEqual(['/b']);
    expect(await socks.waitForLog(`connected to 127.0.0.1:${web.port}`)).toContain(`connected to 127.0.0.1:${web.port}`);
  });

  it('a named host is resolved here and the proxy is told its address; TLS still runs end to end with the name', async () => {
    const seen: string[] = [];
    const tls = createHttpsServer({ ...selfSignedCertificate(), SNICallback: (name, cb) => { seen.push(name); cb(null, undefined as never); } }, (_req, res) => res.end('secret'));
    tls.listen(0, '127.0.0.1');
    await once(tls, 'listening');
    const port = (tls.address() as AddressInfo).port;
    try {
      for (const [name, proxy] of [['sq', squid], ['s5', socks]] as const) {
        const fetcher = makeFetcher({ lookup: testLookup, proxies: through([[name, proxy.url]]) });
        const error = await fetchError(fetcher.fetch(`https://site.test:${port}/`));
        // The certificate is checked against the name through the tunnel: the self-signed one is refused.
        expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'fail' });
        await flush(fetcher);
      }
      expect(seen).toEqual(['site.test', 'site.test']);
      expect(await squid.waitForLog(`CONNECT 127.0.0.1:${port}`)).not.toContain('site.test');
      expect(await socks.waitForLog(`connected to 127.0.0.1:${port}`)).toContain(`connected to 127.0.0.1:${port}`);
    } finally {
      tls.closeAllConnections();
      tls.close();
    }
  });

  it('with credentials: the proxy accepts them, and neither results nor errors show them', async () => {
    web = await startWeb();
    for (const proxy of [squidAuth, socksAuth]) {
      const fetcher = makeFetcher({ proxies: through([['auth', proxy.url]]) });
      const result = await fetcher.fetch(`${web.origin}/auth`);
      expect(result.status).toBe(200);
      expect(inspect(result, { depth: 10 })).not.toContain(PASSWORD);
      expect(inspect(fetcher, { depth: 10 })).not.toContain(PASSWORD);
      expect(JSON.stringify(fetcher, (_k, v: unknown) => (typeof v === 'function' ? undefined : v))).not.toContain(PASSWORD);

      const wrong = proxy.url.replace(PASSWORD, `wrong-${PASSWORD}`);
      const refused = makeFetcher({ proxies: through([['auth', wrong]]) });
      const error = await fetchError(refused.fetch(`${web.origin}/auth`));
      expect(error).toMatchObject({ code: 'ERR_PROXY_UNAVAILABLE', action: 'retry' });
      expect(error.message).toContain('proxy auth (');
      expect(error.message).toContain('***@127.0.0.1');
      if (proxy === squidAuth) expect(error.message).toContain('407');
      expect(inspect(error, { depth: 20 })).not.toContain(PASSWORD);
      expect(JSON.stringify(error)).not.toContain(PASSWORD);
    }
    expect(web.requests.map((r) => r.url)).toEqual(['/auth', '/auth']);
  });

  it('a dead proxy is taken out and its hosts go through another member of the tier, in the same fetch', async () => {
    web = await startWeb();
    const broken = await startTcpServer((socket) => socket.destroy());
    const events: ProxyRequestEvent[] = [];
    const fetcher = makeFetcher({
      lookup: testLookup,
      onProxyRequest: (event) => events.push(event),
      proxies: through([['dead', `http://127.0.0.1:${await deadPort()}`], ['broken', `http://127.0.0.1:${broken.port}`], ['sq', squid.url], ['s5', socks.url]]),
    });

    const results = [];
    for (let i = 0; i < 12; i++) results.push(await fetcher.fetch(`http://h${i}.test:${web.port}/p`));

    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.proxy))).toEqual(new Set(['sq', 's5']));
    expect(fetcher.proxiesOut().map((out) => out.exit).sort()).toEqual(['broken', 'dead']);
    // Taken out after its first failure: later hosts do not try it again.
    expect(broken.connections).toBe(1);
    expect(web.requests).toHaveLength(12);
    // Every exit tried is told: 12 responses, and one failure for each proxy taken out.
    expect(events.filter((e) => e.outcome === 'ok')).toHaveLength(12);
    expect(events.filter((e) => e.outcome === 'proxy-failed').map((e) => e.proxy).sort()).toEqual(['broken', 'dead']);
    expect(new Set(events.map((e) => e.tier))).toEqual(new Set(['1']));
  });

  it('a proxy that accepts and never answers is out after connectMs, for CONNECT and SOCKS5 alike', async () => {
    web = await startWeb();
    const silent = await startTcpServer(() => undefined);
    const fetcher = makeFetcher({
      lookup: testLookup,
      timeouts: { connectMs: 300, firstByteMs: 5_000, idleMs: 5_000, totalMs: 15_000 },
      proxies: through([['mute', `http://127.0.0.1:${silent.port}`], ['mute5', `socks5://127.0.0.1:${silent.port}`], ['sq', squid.url]]),
    });

    const started = Date.now();
    for (let i = 0; i < 8; i++) expect((await fetcher.fetch(`http://m${i}.test:${web.port}/p`)).proxy).toBe('sq');

    expect(fetcher.proxiesOut().map((out) => out.exit).sort()).toEqual(['mute', 'mute5']);
    expect(silent.connections).toBe(2);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('a slow response through SOCKS5 is not cut at connectMs once the tunnel is up', async () => {
    const slow = await startServer((_req, res) => setTimeout(() => res.end('late'), 600));
    const fetcher = makeFetcher({ timeouts: { connectMs: 200, firstByteMs: 5_000, idleMs: 5_000, totalMs: 15_000 }, proxies: through([['s5', socks.url]]) });
    for (let i = 0; i < 2; i++) expect((await fetcher.fetch(`${slow.origin}/slow`)).body.toString()).toBe('late');
    expect(slow.connections).toBe(1);
  });

  it('a site the proxy cannot reach is the site\'s failure: the proxy stays in', async () => {
    const port = await deadPort();
    for (const [name, proxy] of [['sq', squid], ['s5', socks]] as const) {
      const fetcher = makeFetcher({ proxies: through([[name, proxy.url]]) });
      const error = await fetchError(fetcher.fetch(`http://127.0.0.1:${port}/`));
      // squid answers the CONNECT 503; microsocks replies "connection refused".
      expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'retry', details: { proxy: name } });
      expect(error.message).toContain(`could not reach 127.0.0.1:${port}`);
      expect(fetcher.proxiesOut()).toEqual([]);
    }
  });

  it('a proxy named by a host that resolves to a refused address is never connected to', async () => {
    web = await startWeb();
    for (const url of ['http://private.test:3128', 'socks5://private.test:1080']) {
      const fetcher = makeFetcher({ lookup: testLookup, proxies: through([['p', url]]) });
      const error = await fetchError(fetcher.fetch(`${web.origin}/x`));
      expect(error).toMatchObject({ code: 'ERR_PROXY_UNAVAILABLE', action: 'retry' });
      expect(error.message).toMatch(/proxy p \((http|socks5):\/\/private\.test:\d+\) failed: .*10\.0\.0\.7/);
    }
    expect(web.requests).toEqual([]);
  });

  it('every proxy of the tier out: the fetch is retried later (retryAt), and the site hears nothing', async () => {
    web = await startWeb();
    const fetcher = makeFetcher({ proxies: through([['dead', `http://127.0.0.1:${await deadPort()}`], ['dead5', `socks5://127.0.0.1:${await deadPort()}`]], { backoffBaseMs: 5_000 }) });

    const before = Date.now();
    const error = await fetchError(fetcher.fetch(`${web.origin}/x`));
    const again = await fetchError(fetcher.fetch(`${web.origin}/x`));

    expect(error).toMatchObject({ code: 'ERR_PROXY_UNAVAILABLE', action: 'retry', details: { tier: '1' } });
    expect(error.message).toMatch(/ECONNREFUSED/);
    expect(error.retryAt).toBeGreaterThanOrEqual(before + 5_000);
    expect(again).toMatchObject({ code: 'ERR_PROXY_UNAVAILABLE' });
    expect(web.requests).toEqual([]);
  });

  it('robots.txt goes through the same proxy as the host\'s pages; a rule sends a domain direct', async () => {
    web = await startWeb();
    const fetcher = makeFetcher({
      lookup: testLookup,
      proxies: through([['sq', squid.url], ['s5', socks.url]], { rules: [{ domain: 'direct.test', tier: 'none' }] }),
    });

    const picks = [];
    for (let i = 0; i < 6; i++) {
      const page = await fetcher.fetch(`http://r${i}.test:${web.port}/page`);
      const robots = await fetcher.fetchRobots(`http://r${i}.test:${web.port}/robots.txt`);
      expect(robots).toMatchObject({ kind: 'response', status: 200 });
      picks.push(page.proxy);
      // Same exit for the host's robots.txt: a second fetch of it reports the same proxy.
      expect((await fetcher.fetch(`http://r${i}.test:${web.port}/robots.txt`)).proxy).toBe(page.proxy);
    }
    expect(new Set(picks)).toEqual(new Set(['sq', 's5']));
    const direct = await fetcher.fetch(`http://www.direct.test:${web.port}/d`);
    expect(direct.proxy).toBe('none');
    expect(direct.wire?.remoteAddress).toBe('127.0.0.1');
  });
});

describe('the SSRF guard through a proxy', () => {
  it('judges the target before the proxy hears of it', async () => {
    web = await startWeb();
    const fetcher = makeFetcher({
      lookup: testLookup,
      // The proxies' ports only: the site's own port is not allowed.
      ssrf: { allowNetworks: [`127.0.0.1:${squid.port}`, `127.0.0.1:${socks.port}`] },
      proxies: through([['sq', squid.url]]),
    });
    const viaSocks = makeFetcher({ lookup: testLookup, ssrf: { allowNetworks: [`127.0.0.1:${socks.port}`] }, proxies: through([['s5', socks.url]]) });

    for (const f of [fetcher, viaSocks]) {
      expect(await fetchError(f.fetch(`${web.origin}/literal`))).toMatchObject({ code: 'ERR_SSRF_BLOCKED', action: 'skip' });
      expect(await fetchError(f.fetch(`http://site.test:${web.port}/named`))).toMatchObject({ code: 'ERR_SSRF_BLOCKED', action: 'skip' });
      expect(await fetchError(f.fetch(`http://private.test:${web.port}/rfc1918`))).toMatchObject({ code: 'ERR_SSRF_BLOCKED', details: { reason: 'private' } });
      expect(await fetchError(f.fetch('http://169.254.169.254/latest/meta-data/'))).toMatchObject({ code: 'ERR_SSRF_BLOCKED', details: { reason: 'cloud-metadata' } });
    }
    expect(fetcher.proxiesOut()).toEqual([]);
    expect(web.requests).toEqual([]);
    await flush(fetcher);
    await flush(viaSocks);
    expect(squid.log()).not.toMatch(new RegExp(`CONNECT [^ ]*:(${web.port}|80) `));
    expect(socks.log()).not.toContain(`:${web.port}`);
  });

  it('a proxy at an address the guard refuses stops the Fetcher at construction, naming the setting', () => {
    expect(() => makeFetcher({ ssrf: { allowNetworks: [] }, proxies: through([['dc1', 'http://user:hunter2@10.0.0.5:3128']]) })).toThrow(
      /proxy dc1 \(http:\/\/\*\*\*@10\.0\.0\.5:3128\) is at a private address, which the SSRF guard refuses: allow it in ssrf\.allowNetworks \(e\.g\. 10\.0\.0\.5:3128\)/,
    );
    expect(() => makeFetcher({ ssrf: { allowNetworks: [] }, proxies: through([['dc1', 'http://user:hunter2@10.0.0.5:3128']]) })).not.toThrow(/hunter2/);
    expect(() => makeFetcher({ ssrf: { allowNetworks: ['10.0.0.5:3128'] }, proxies: through([['dc1', 'http://10.0.0.5:3128']]) })).not.toThrow();
    expect(() => makeFetcher({ proxies: through([['dc1', 'ftp://10.0.0.5:21']]) })).toThrow(/ftp:\/\/ is not supported/);
  });
});

function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'trawl-proxy-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=site.test',
      '-addext', 'subjectAltName=DNS:site.test', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
