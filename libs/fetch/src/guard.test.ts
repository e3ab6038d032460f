import { once } from 'node:events';
import { get as httpGet } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer as createTcpServer, type LookupFunction } from 'node:net';
import type { TrawlError } from '@trawl/core';
import { afterEach, describe, expect, it } from 'vitest';
import { DnsCache } from './dns-cache.js';
import { FetchErrorCode } from './errors.js';
import { GuardedHttpAgent, GuardedHttpsAgent } from './guard.js';
import { closeAll, fetchError, makeFetcher, startServer, startTcpServer } from './servers.test-helpers.js';

afterEach(closeAll);

/** A lookup answering every name with `addresses` (in order), recording the names asked. */
function fixedLookup(addresses: string[], asked: string[] = []): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    asked.push(hostname);
    const entries = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (options.all === true) callback(null, entries);
    else callback(null, entries[0]?.address, entries[0]?.family);
  }) as unknown as LookupFunction;
}

function expectBlocked(error: TrawlError, reason: string): void {
  expect(error.code as string).toBe(FetchErrorCode.SsrfBlocked);
  expect(error.action).toBe('skip');
  expect(error.details).toMatchObject({ reason });
}

async function canListen(host: string): Promise<boolean> {
  const probe = createTcpServer();
  try {
    probe.listen(0, host);
    await once(probe, 'listening');
    probe.close();
    return true;
  } catch {
    return false;
  }
}

describe('SSRF guard in the Fetcher', () => {
  it('is on by default: a server on 127.0.0.1 is refused and sees no connection at all', async () => {
    const server = await startServer((_req, res) => res.end('secret'));
    const fetcher = makeFetcher({ ssrf: undefined });
    const error = await fetchError(fetcher.fetch(`${server.origin}/admin`));
    expectBlocked(error, 'loopback');
    expect(error.details).toMatchObject({ stage: 'literal', address: '127.0.0.1' });
    expect(error.message).toMatch(/refusing to connect to 127\.0\.0\.1: loopback/);
    expect(server.connections).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  it('allows the same server with allowNetworks 127.0.0.0/8', async () => {
    const server = await startServer((_req, res) => res.end('fine'));
    const result = await makeFetcher({ ssrf: { allowNetworks: ['127.0.0.0/8'] } }).fetch(`${server.origin}/`);
    expect(result.body.toString()).toBe('fine');
  });

  it('refuses a hostname the injected lookup resolves to 127.0.0.5, before connecting', async () => {
    const server = await startServer((_req, res) => res.end('secret'), { host: '127.0.0.5' });
    const asked: string[] = [];
    const fetcher = makeFetcher({ ssrf: undefined, lookup: fixedLookup(['127.0.0.5'], asked) });
    const error = await fetchError(fetcher.fetch(`http://innocent.test:${server.port}/`));
    expectBlocked(error, 'loopback');
    expect(error.details).toMatchObject({ stage: 'lookup', host: 'innocent.test', address: '127.0.0.5' });
    expect(error.message).toMatch(/innocent\.test resolved to it/);
    expect(asked).toEqual(['innocent.test']);
    expect(server.connections).toBe(0);
  });

  it('refuses a name the DNS cache resolves to the metadata service', async () => {
    const dns = new DnsCache({
      resolver: {
        resolve4: async () => [{ address: '169.254.169.254', ttl: 60 }],
        resolve6: async () => [],
      },
    });
    const error = await fetchError(makeFetcher({ dns }).fetch('http://metadata.test/latest/meta-data/'));
    expectBlocked(error, 'cloud-metadata');
  });

  it.each([
    ['allowed first', ['127.0.0.1', '127.0.0.2', '10.0.0.1']],
    ['refused first', ['10.0.0.1', '127.0.0.2', '127.0.0.1']],
  ])('a name resolving to allowed and refused addresses (%s) only ever connects to the allowed one', async (_order, addresses) => {
    // 127.0.0.1 plays the public address; 127.0.0.2 and 10.0.0.1 the private ones.
    const allowed = await startServer((_req, res) => {
      res.writeHead(200, { connection: 'close' }); // a new connection (and lookup) every fetch
      res.end('public');
    });
    const refused = await startServer((_req, res) => res.end('private'), { host: '127.0.0.2', port: allowed.port });
    const fetcher = makeFetcher({ ssrf: { allowNetworks: ['127.0.0.1/32'] }, lookup: fixedLookup(addresses) });
    for (let i = 0; i < 5; i++) {
      const result = await fetcher.fetch(`http://mixed.test:${allowed.port}/${i}`);
      expect(result.body.toString()).toBe('public');
    }
    expect(allowed.requests).toHaveLength(5);
    expect(refused.connections).toBe(0);
  });

  it('DNS rebinding: a name that later resolves to a refused address is refused on the next connection', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { connection: 'close' });
      res.end('ok');
    });
    const answers = ['127.0.0.1', '127.0.0.2'];
    let call = 0;
    const lookup = ((_hostname: string, _options: unknown, callback: (...args: unknown[]) => void) => {
      const address = answers[Math.min(call++, answers.length - 1)];
      callback(null, [{ address, family: 4 }]);
    }) as unknown as LookupFunction;
    const fetcher = makeFetcher({ ssrf: { allowNetworks: ['127.0.0.1/32'] }, lookup });
    expect((await fetcher.fetch(`http://rebind.test:${server.port}/`)).status).toBe(200);
    expectBlocked(await fetchError(fetcher.fetch(`http://rebind.test:${server.port}/`)), 'loopback');
    expect(server.requests).toHaveLength(1);
  });

  it('refuses the IPv6 loopback literal [::1]', async () => {
    const ipv6 = await canListen('::1');
    const server = ipv6 ? await startServer((_req, res) => res.end('secret'), { host: '::1' }) : undefined;
    const error = await fetchError(makeFetcher({ ssrf: undefined }).fetch(`http://[::1]:${server?.port ?? 80}/`));
    expectBlocked(error, 'loopback');
    expect(error.details).toMatchObject({ stage: 'literal', address: '::1' });
    expect(server?.connections ?? 0).toBe(0);
  });

  it('refuses [::ffff:127.0.0.1] (IPv4-mapped loopback) and lets an IPv4 allow list open it', async () => {
    const server = await startServer((_req, res) => res.end('mapped'));
    const url = `http://[::ffff:127.0.0.1]:${server.port}/`;
    expectBlocked(await fetchError(makeFetcher({ ssrf: undefined }).fetch(url)), 'loopback');
    expect(server.connections).toBe(0);
    // Allowed by the IPv4 CIDR: the socket's remoteAddress is ::ffff:127.0.0.1 and passes too.
    const result = await makeFetcher({ ssrf: { allowNetworks: ['127.0.0.0/8'] } }).fetch(url);
    expect(result.body.toString()).toBe('mapped');
  });

  it.each([
    ['http://0.0.0.0:9/', 'unspecified'],
    ['http://169.254.169.254/latest/meta-data/', 'cloud-metadata'],
    ['http://10.1.2.3/', 'private'],
    ['http://[fd00:ec2::254]/', 'cloud-metadata'],
    ['http://[fe80::1]/', 'link-local'],
    ['http://0x7f.1/', 'loopback'], // the URL parser makes it 127.0.0.1
    ['http://2130706433/', 'loopback'],
  ])('refuses the literal %s (%s)', async (url, reason) => {
    expectBlocked(await fetchError(makeFetcher({ ssrf: undefined }).fetch(url)), reason);
  });

  it('an allowed network with ports opens those ports only: another port on it is refused on the socket', async () => {
    const open = await startServer((_req, res) => res.end('open'));
    const other = await startServer((_req, res) => res.end('secret'));
    const fetcher = makeFetcher({ ssrf: { allowNetworks: [`127.0.0.0/8:${open.port}`] } });
    expect((await fetcher.fetch(`${open.origin}/`)).body.toString()).toBe('open');
    const error = await fetchError(fetcher.fetch(`${other.origin}/admin`));
    expectBlocked(error, 'loopback');
    expect(error.details).toMatchObject({ stage: 'connect', address: '127.0.0.1' });
    expect(other.requests).toHaveLength(0);
    // A range, and an address with every port, side by side.
    const ranged = makeFetcher({ ssrf: { allowNetworks: [`127.0.0.1:${Math.min(open.port, other.port)}-${Math.max(open.port, other.port)}`, '10.0.0.1'] } });
    expect((await ranged.fetch(`${other.origin}/`)).body.toString()).toBe('secret');
  });

  it('rejects a malformed allow list at construction', () => {
    for (const bad of ['127.0.0.1:0', '127.0.0.1:70000', '127.0.0.1:90-80', '::1:80x', 'localhost:80']) expect(() => makeFetcher({ ssrf: { allowNetworks: [bad] } }), bad).toThrow();
    expect(() => makeFetcher({ ssrf: { allowNetworks: ['127.0.0.0/8', 'localhost'] } })).toThrow(
      expect.objectContaining({ code: 'ERR_CONFIG_INVALID', message: expect.stringMatching(/localhost/) }),
    );
  });
});

describe('SSRF guard on the socket (the address actually connected to)', () => {
  it.each([
    ['http', GuardedHttpAgent],
    ['https', GuardedHttpsAgent],
  ] as const)('a %s agent destroys a socket to a refused peer before writing a byte', async (scheme, Agent) => {
    const tcp = await startTcpServer(() => undefined);
    const agent = new Agent({ keepAlive: false }, { allowNetworks: [] });
    try {
      const request = scheme === 'http' ? httpGet : httpsRequest;
      // No Fetcher, no guarded lookup, no literal check: only the agent's socket guard.
      const req = request({ host: '127.0.0.1', port: tcp.port, path: '/', agent, method: 'GET' });
      if (scheme === 'https') req.end();
      const [error] = (await once(req, 'error')) as [TrawlError];
      expectBlocked(error, 'loopback');
      expect(error.details).toMatchObject({ stage: 'connect', address: '127.0.0.1' });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(tcp.connections).toBe(1); // the handshake happened…
      expect(tcp.bytesReceived).toBe(0); // …but no request line, no TLS ClientHello
    } finally {
      agent.destroy();
    }
  });

  it('lets a socket to an allowed peer through', async () => {
    const server = await startServer((_req, res) => res.end('through'));
    const agent = new GuardedHttpAgent({ keepAlive: false }, { allowNetworks: ['127.0.0.1/32'] });
    try {
      const req = httpGet({ host: '127.0.0.1', port: server.port, path: '/', agent });
      const [res] = (await once(req, 'response')) as [NodeJS.ReadableStream];
      res.resume();
      await once(res, 'end');
      expect(server.requests).toHaveLength(1);
    } finally {
      agent.destroy();
    }
  });
});
