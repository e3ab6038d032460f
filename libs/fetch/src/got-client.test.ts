import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, deflateSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { causeCode, closeAll, fetchError, makeFetcher, startServer, startTcpServer } from './servers.test-helpers.js';

afterEach(closeAll);

/** What got would do by default and the fetcher must not: follow, retry, offer more than it decodes. */
describe('got under the fetcher', () => {
  it('follows no redirect and retries nothing: a 302, a 503 and a 429 cost one request each', async () => {
    const server = await startServer((req, res) => {
      if (req.url === '/moved') res.writeHead(302, { location: '/target' }).end();
      else if (req.url === '/busy') res.writeHead(503, { 'retry-after': '0' }).end('later');
      else res.writeHead(429, { 'retry-after': '0' }).end('slow down');
    });
    const fetcher = makeFetcher();

    const moved = await fetcher.fetch(`${server.origin}/moved`);
    const busy = await fetcher.fetch(`${server.origin}/busy`);
    const slow = await fetcher.fetch(`${server.origin}/slow`);

    expect(moved).toMatchObject({ status: 302, location: `${server.origin}/target` });
    expect(busy.status).toBe(503);
    expect(busy.body.toString()).toBe('later');
    expect(slow.status).toBe(429);
    expect(server.requests.map((r) => r.url)).toEqual(['/moved', '/busy', '/slow']);
  });

  it('offers exactly the codings it decodes, and decodes deflate sent raw or zlib-wrapped', async () => {
    // A raw deflate stream is told from a zlib one by its first byte's bit 3 (clear here; a zlib
    // header's is set); raw streams whose first byte has it set are read as zlib and fail.
    const text = `<html>${'x'.repeat(100)}`;
    expect((deflateRawSync(text)[0] as number) & 0x08).toBe(0);
    const server = await startServer((req, res) => {
      const body = req.url === '/raw' ? deflateRawSync(text) : deflateSync(text);
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'deflate' }).end(body);
    });
    const fetcher = makeFetcher();

    const raw = await fetcher.fetch(`${server.origin}/raw`);
    const wrapped = await fetcher.fetch(`${server.origin}/zlib`);

    expect(server.requests[0]?.headers['accept-encoding']).toBe('gzip, deflate, br');
    expect(raw.body.toString()).toBe(text);
    expect(wrapped.body.toString()).toBe(text);
    expect(raw.headers['content-encoding']).toBe('deflate');
    expect(raw.rawBytes).toBeLessThan(text.length);
  });

  it('signs the headers got is about to send, per request and per robots.txt hop, and the signature is in the wire record', async () => {
    const server = await startServer((req, res) => {
      if (req.url === '/robots.txt') res.writeHead(301, { location: '/real-robots.txt' }).end();
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
    });
    const signed: Array<{ method: string; url: string; headers: Record<string, unknown> }> = [];
    const fetcher = makeFetcher({
      signRequest: (method, url, headers) => {
        signed.push({ method, url, headers: { ...headers } });
        return { 'x-test-signature': `for ${new URL(url).pathname}` };
      },
    });

    const page = await fetcher.fetch(`${server.origin}/page`, { headers: { 'if-none-match': '"v1"' } });
    const robots = await fetcher.fetchRobots(`${server.origin}/robots.txt`);

    expect(robots).toMatchObject({ kind: 'response', status: 200, redirects: 1 });
    expect(signed.map((s) => [s.method, s.url])).toEqual([
      ['GET', `${server.origin}/page`],
      ['GET', `${server.origin}/robots.txt`],
      ['GET', `${server.origin}/real-robots.txt`],
    ]);
    expect(signed[0]?.headers).toMatchObject({ 'user-agent': expect.any(String), accept: expect.any(String), 'accept-encoding': 'gzip, deflate, br', 'if-none-match': '"v1"' });
    expect(server.requests.map((r) => r.headers['x-test-signature'])).toEqual(['for /page', 'for /robots.txt', 'for /real-robots.txt']);
    expect(page.wire?.request.headers['x-test-signature']).toBe('for /page');
  });
});

/** A self-signed certificate for 127.0.0.1, made by the openssl CLI for this file. */
function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'trawl-fetch-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('https through got', () => {
  it('a server that accepts TCP and never answers the TLS handshake times out in the secureConnect phase', async () => {
    const tcp = await startTcpServer(() => undefined);
    const fetcher = makeFetcher({ timeouts: { connectMs: 300, firstByteMs: 5_000, idleMs: 5_000, totalMs: 10_000 } });

    const error = await fetchError(fetcher.fetch(`https://127.0.0.1:${tcp.port}/`));

    expect(error).toMatchObject({ code: 'ERR_FETCH_TIMEOUT', action: 'retry', details: { phase: 'secureConnect', timeoutMs: 300 } });
    expect(tcp.connections).toBe(1);
  });

  it('verifies certificates: a self-signed one is a permanent failure and no request is sent', async () => {
    const requests: string[] = [];
    const server = createHttpsServer(selfSignedCertificate(), (req, res) => {
      requests.push(req.url ?? '');
      res.end('secret');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const fetcher = makeFetcher();
      const error = await fetchError(fetcher.fetch(`https://127.0.0.1:${(server.address() as AddressInfo).port}/`));
      expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'fail' });
      expect(causeCode(error)).toMatch(/SELF_SIGNED|CERT|UNABLE_TO/);
      expect(requests).toEqual([]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('an https URL answered in plain HTTP fails without sending the request in clear', async () => {
    const server = await startServer((_req, res) => res.end('plain'));
    const fetcher = makeFetcher();

    const error = await fetchError(fetcher.fetch(`https://127.0.0.1:${server.port}/`));

    expect(error.code).toBe('ERR_FETCH_NETWORK');
    expect(server.requests).toEqual([]);
  });
});
