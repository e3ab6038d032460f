import { getEventListeners, once } from 'node:events';
import type { LookupFunction, Socket } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { Fetcher } from './fetcher.js';
import {
  baseOptions,
  causeCode,
  closeAll,
  fetchError,
  makeFetcher,
  startServer,
  startTcpServer,
} from './servers.test-helpers.js';

afterEach(closeAll);

describe('Fetcher results', () => {
  it('returns a 200 with body, headers, validators and clock stamps', async () => {
    const body = '<html><body><a href="/x">x</a></body></html>';
    const server = await startServer((_req, res) => {
      res.writeHead(200, {
        'content-type': 'text/html; Charset=ISO-8859-1',
        etag: '"v1"',
        'last-modified': 'Wed, 21 Oct 2015 07:28:00 GMT',
        'x-trawl-test': 'yes',
      });
      res.end(body);
    });
    let tick = 1_000;
    const fetcher = makeFetcher({ clock: { now: () => (tick += 10) } });

    const result = await fetcher.fetch(`${server.origin}/page?q=1`);

    expect(result).toMatchObject({
      url: `${server.origin}/page?q=1`,
      status: 200,
      contentType: 'text/html',
      charset: 'iso-8859-1',
      location: null,
      truncated: false,
      bodySkipped: false,
      etag: '"v1"',
      lastModified: 'Wed, 21 Oct 2015 07:28:00 GMT',
    });
    expect(result.body.toString()).toBe(body);
    expect(result.rawBytes).toBe(Buffer.byteLength(body));
    expect(result.headers['x-trawl-test']).toBe('yes');
    expect(result.startedAt).toBeLessThan(result.firstByteAt ?? 0);
    expect(result.firstByteAt).toBeLessThan(result.endedAt);

    expect(server.requests).toHaveLength(1);
    const sent = server.requests[0]?.headers;
    expect(sent?.['user-agent']).toBe(baseOptions.userAgent);
    expect(sent?.['accept']).toBe('text/html,application/xhtml+xml;q=0.9,*/*;q=0.5');
    expect(sent?.['accept-encoding']).toMatch(/gzip/);
  });

  it('says what it sent and how the response came, for archiving', async () => {
    const server = await startServer((_req, res) => {
      res.statusMessage = 'Fine Thanks';
      res.setHeader('X-Mixed-Case', 'a');
      res.setHeader('Set-Cookie', ['one=1', 'two=2']);
      res.end('body');
    });
    const result = await makeFetcher().fetch(`${server.origin}/p?q=1`, { headers: { 'if-none-match': '"v1"' } });
    const received = server.requests[0]?.headers ?? {};
    const { connection: _c, ...receivedWithoutConnection } = received;
    expect(result.wire?.request.method).toBe('GET');
    // Every header the server received, as sent; Node adds Connection itself while writing.
    expect(result.wire?.request.headers).toEqual(receivedWithoutConnection);
    expect(result.wire?.request.headers['if-none-match']).toBe('"v1"');
    expect(result.wire).toMatchObject({ httpVersion: '1.1', statusText: 'Fine Thanks', remoteAddress: '127.0.0.1' });
    expect(result.wire?.rawHeaders).toEqual(expect.arrayContaining([['X-Mixed-Case', 'a'], ['Set-Cookie', 'one=1'], ['Set-Cookie', 'two=2']]));
  });

  it.each([404, 410, 429, 500, 503])('returns a %i as a result, not an error', async (status) => {
    const server = await startServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'text/plain', 'retry-after': '120' });
      res.end(`status ${status}`);
    });
    const result = await makeFetcher().fetch(`${server.origin}/`);
    expect(result.status).toBe(status);
    expect(result.body.toString()).toBe(`status ${status}`);
    expect(result.headers['retry-after']).toBe('120');
  });

  it.each([
    [301, 'https://elsewhere.example/new', 'https://elsewhere.example/new'],
    [302, '/moved/here?x=1', '/moved/here?x=1'],
    [307, 'sibling', '/dir/sibling'],
    [308, '//cdn.example/p', 'http://cdn.example/p'],
  ])('returns a %i with Location %s resolved, without following it', async (status, location, expected) => {
    const server = await startServer((_req, res) => {
      res.writeHead(status, { location });
      res.end('moved');
    });
    const result = await makeFetcher().fetch(`${server.origin}/dir/page`);
    expect(result.status).toBe(status);
    expect(result.location).toBe(expected.startsWith('/') ? `${server.origin}${expected}` : expected);
    expect(server.requests.map((r) => r.url)).toEqual(['/dir/page']);
  });

  it('gives a null location without a 3xx or without a header', async () => {
    const server = await startServer((req, res) => {
      if (req.url === '/created') res.writeHead(201, { location: '/thing' });
      else res.writeHead(302);
      res.end();
    });
    const fetcher = makeFetcher();
    expect((await fetcher.fetch(`${server.origin}/created`)).location).toBeNull();
    expect((await fetcher.fetch(`${server.origin}/bare`)).location).toBeNull();
  });

  it('sends conditional headers and returns a 304', async () => {
    const server = await startServer((req, res) => {
      if (req.headers['if-none-match'] === '"v1"') {
        res.writeHead(304, { etag: '"v1"' });
        res.end();
        return;
      }
      res.end('full');
    });
    const result = await makeFetcher().fetch(`${server.origin}/`, { headers: { 'if-none-match': '"v1"' } });
    expect(result.status).toBe(304);
    expect(result.body.length).toBe(0);
    expect(result.etag).toBe('"v1"');
  });

  it.each([
    ['gzip', gzipSync],
    ['br', brotliCompressSync],
  ] as const)('decodes a %s body and counts the compressed bytes', async (encoding, compress) => {
    const html = '<p>compressible paragraph</p>\n'.repeat(2_000);
    const compressed = compress(Buffer.from(html));
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': encoding });
      res.end(compressed);
    });
    const result = await makeFetcher().fetch(`${server.origin}/`);
    expect(result.body.toString()).toBe(html);
    expect(result.rawBytes).toBe(compressed.length);
    expect(result.headers['content-encoding']).toBe(encoding);
    expect(result.truncated).toBe(false);
  });

  it('caps the body: 10 MB sent, 1 MB kept, truncated, and the fetch ends promptly', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const server = await startServer((_req, res) => {
      // Larger than cap + loopback socket buffers (~4 MB), so the server must see the hang-up.
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': String(160 * chunk.length) });
      let sent = 0;
      const pump = (): void => {
        while (sent < 160) {
          sent++;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const started = performance.now();
    const result = await makeFetcher({ maxBodyBytes: 1024 * 1024 }).fetch(`${server.origin}/big`);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(result.body.length).toBe(1024 * 1024);
    expect(result.truncated).toBe(true);
    expect(result.status).toBe(200);
    await server.aborted; // the client hung up instead of reading the other 9 MB
  });

  it('caps a decompression bomb at the decoded size', async () => {
    const bomb = gzipSync(Buffer.alloc(32 * 1024 * 1024)); // ~32 KB on the wire
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
      res.end(bomb);
    });
    const result = await makeFetcher({ maxBodyBytes: 1024 * 1024 }).fetch(`${server.origin}/`);
    expect(result.body.length).toBe(1024 * 1024);
    expect(result.truncated).toBe(true);
    expect(result.rawBytes).toBeLessThanOrEqual(bomb.length);
  });

  it('a body exactly at the cap is not truncated', async () => {
    const server = await startServer((_req, res) => res.end(Buffer.alloc(1000, 'x')));
    const result = await makeFetcher({ maxBodyBytes: 1000 }).fetch(`${server.origin}/`);
    expect(result.body.length).toBe(1000);
    expect(result.truncated).toBe(false);
  });

  it('reuses one keep-alive socket for sequential fetches to a host', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    const fetcher = makeFetcher();
    await fetcher.fetch(`${server.origin}/one`);
    await fetcher.fetch(`${server.origin}/two`);
    await fetcher.fetch(`${server.origin}/three`);
    expect(server.requests).toHaveLength(3);
    expect(server.connections).toBe(1);
  });

  it('lets go of a finished request: no listener left on the caller\'s signal, the socket kept alive', async () => {
    // A job's signal is an AbortSignal.any composite, which Node keeps from collection while it
    // has an abort listener: one left there held every fetched page's request and body for the
    // worker's life (found as a main-thread heap growing by a page's size per page).
    const server = await startServer((_req, res) => res.end('x'.repeat(20_000)));
    const fetcher = makeFetcher();
    const signals = [0, 1, 2].map(() => AbortSignal.any([new AbortController().signal]));
    for (const [i, signal] of signals.entries()) {
      const result = await fetcher.fetch(`${server.origin}/${i}`, { signal });
      expect(result.body.length).toBe(20_000);
      expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    }
    // Destroying the finished stream does not cost the keep-alive connection.
    expect(server.connections).toBe(1);
  });

  it('resolves names through the injected lookup', async () => {
    const server = await startServer((_req, res) => res.end('via lookup'));
    const resolved: string[] = [];
    const lookup = ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
      resolved.push(hostname);
      if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    }) as unknown as LookupFunction;
    const result = await makeFetcher({ lookup }).fetch(`http://site-a.test:${server.port}/`);
    expect(result.body.toString()).toBe('via lookup');
    expect(resolved).toEqual(['site-a.test']);
    expect(server.requests[0]?.headers.host).toBe(`site-a.test:${server.port}`);
  });
});

describe('Fetcher errors', () => {
  it('times out waiting for the first byte', async () => {
    const server = await startServer(() => undefined); // never answers
    const fetcher = makeFetcher({ timeouts: { connectMs: 1_000, firstByteMs: 300, idleMs: 5_000, totalMs: 10_000 } });
    const started = performance.now();
    const error = await fetchError(fetcher.fetch(`${server.origin}/slow`));
    const elapsed = performance.now() - started;
    expect(error).toMatchObject({ code: 'ERR_FETCH_TIMEOUT', action: 'retry', details: { phase: 'response' } });
    expect(error.message).toMatch(/first byte/);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_500);
    expect(error.cause).toBeInstanceOf(Error);
    expect(server.requests).toHaveLength(1); // got's own retries are off
  });

  it('times out when the body stalls (idle)', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': '1000' });
      res.write('<html>partial');
    });
    const fetcher = makeFetcher({ timeouts: { connectMs: 1_000, firstByteMs: 1_000, idleMs: 300, totalMs: 10_000 } });
    const started = performance.now();
    const error = await fetchError(fetcher.fetch(`${server.origin}/stall`));
    expect(error).toMatchObject({ code: 'ERR_FETCH_TIMEOUT', action: 'retry', details: { phase: 'socket' } });
    expect(error.message).toMatch(/idle/);
    expect(performance.now() - started).toBeLessThan(1_500);
  });

  it('times out on the total deadline when the body trickles', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      const timer = setInterval(() => res.write('.'), 50);
      res.on('close', () => clearInterval(timer));
    });
    const fetcher = makeFetcher({ timeouts: { connectMs: 1_000, firstByteMs: 1_000, idleMs: 1_000, totalMs: 500 } });
    const started = performance.now();
    const error = await fetchError(fetcher.fetch(`${server.origin}/trickle`));
    const elapsed = performance.now() - started;
    expect(error).toMatchObject({ code: 'ERR_FETCH_TIMEOUT', action: 'retry', details: { phase: 'request' } });
    expect(error.message).toMatch(/total/);
    expect(elapsed).toBeGreaterThanOrEqual(490);
    expect(elapsed).toBeLessThan(2_000);
  });

  it('connection refused is a retryable network error', async () => {
    const server = await startServer(() => undefined);
    server.server.close();
    await once(server.server, 'close');
    const error = await fetchError(makeFetcher().fetch(`${server.origin}/`));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'retry' });
    expect(causeCode(error)).toBe('ECONNREFUSED');
  });

  it('a connection reset mid-body is a retryable network error', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-length': '100000' });
      res.write('x'.repeat(1000), () => res.socket?.destroy());
    });
    const error = await fetchError(makeFetcher().fetch(`${server.origin}/`));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'retry' });
    expect(server.requests).toHaveLength(1); // got's own retries are off
  });

  it.each([
    ['ENOTFOUND', 'getaddrinfo', 'skip', /no such host/],
    ['EAI_AGAIN', 'getaddrinfo', 'retry', /temporary/],
    ['ESERVFAIL', 'queryA', 'retry', /SERVFAIL/],
  ])('a DNS %s from the lookup is a network error with action %s', async (code, syscall, action, meaning) => {
    const lookup = ((hostname: string, _options: unknown, callback: (error: Error) => void) => {
      callback(Object.assign(new Error(`${syscall} ${code} ${hostname}`), { code, hostname, syscall }));
    }) as unknown as LookupFunction;
    const error = await fetchError(makeFetcher({ lookup }).fetch('http://no-such-host.invalid/'));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action, details: { errno: code, dns: true } });
    expect(error.message).toMatch(/DNS lookup of no-such-host\.invalid failed/);
    expect(error.message).toMatch(meaning);
    expect(causeCode(error)).toBe(code);
  });

  it('times out a DNS lookup that never answers (connect phase)', async () => {
    const lookup = (() => undefined) as unknown as LookupFunction; // never calls back
    const fetcher = makeFetcher({ lookup, timeouts: { ...baseOptions.timeouts, connectMs: 200 } });
    const started = performance.now();
    const error = await fetchError(fetcher.fetch('http://black-hole.test/'));
    expect(error).toMatchObject({ code: 'ERR_FETCH_TIMEOUT', action: 'retry', details: { phase: 'lookup' } });
    expect(error.message).toMatch(/DNS lookup.*connectMs 200/);
    expect(performance.now() - started).toBeLessThan(1_500);
  });

  it('a malformed HTTP response is a permanent failure', async () => {
    const tcp = await startTcpServer((socket: Socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\nbody'));
    });
    const error = await fetchError(makeFetcher().fetch(`http://127.0.0.1:${tcp.port}/`));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'fail' });
    expect(String(causeCode(error))).toMatch(/^HPE_/);
  });

  it('a body that does not decompress is a permanent failure', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(Buffer.concat([gzipSync(Buffer.from('x'.repeat(1000))).subarray(0, 10), Buffer.from('garbage-garbage')]));
    });
    const error = await fetchError(makeFetcher().fetch(`${server.origin}/`));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'fail' });
  });

  it('an abort from the caller is a retry', async () => {
    const server = await startServer(() => undefined);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const error = await fetchError(makeFetcher().fetch(`${server.origin}/`, { signal: controller.signal }));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'retry', details: { aborted: true } });
  });

  it.each([
    ['not a url', 'ERR_URL_INVALID'],
    ['ftp://files.example/x', 'ERR_URL_SCHEME'],
    ['javascript:alert(1)', 'ERR_URL_SCHEME'],
  ])('refuses %s with %s (skip)', async (url, code) => {
    const error = await fetchError(makeFetcher().fetch(url));
    expect(error).toMatchObject({ code, action: 'skip' });
  });

  it('close() destroys the agents and refuses new fetches', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    const fetcher = makeFetcher();
    await fetcher.fetch(`${server.origin}/`);
    fetcher.close();
    const error = await fetchError(fetcher.fetch(`${server.origin}/`));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'retry' });
  });

  it('rejects bad options with ERR_CONFIG_INVALID', () => {
    expect(() => new Fetcher({ ...baseOptions, userAgent: ' ' })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(() => new Fetcher({ ...baseOptions, maxBodyBytes: 0 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(
      () => new Fetcher({ ...baseOptions, timeouts: { ...baseOptions.timeouts, firstByteMs: Number.NaN } }),
    ).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
  });
});
