// Servers that misbehave on purpose: tarpits, black holes, decompression bombs, lies about the
// encoding, bodies past the cap, bodies of a type we do not want. Each case checks the fetch
// ends, in bounded time and bounded bytes, with the right outcome. Run with TRAWL_FETCH_REPORT=1
// to print what each case cost.
import { createBrotliCompress, constants as zlib, deflateRawSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  closeAll,
  fetchError,
  makeFetcher,
  measurements,
  pump,
  startServer,
  startTcpServer,
  type TestServer,
} from './servers.test-helpers.js';

afterEach(closeAll);
afterAll(() => {
  if (process.env['TRAWL_FETCH_REPORT'] !== undefined) console.table(measurements);
});

const KiB = 1024;
const MiB = 1024 * KiB;

/** The fetch under test, timed; `server.bytesWritten` is what the server managed to send. */
async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await run();
  return { value, ms: Math.round(performance.now() - started) };
}

// ---------------------------------------------------------------------------------------------
// Decompression bombs, generated on the fly: one compressed segment, repeated.

/**
 * gzip: a 10-byte header, then 10,240 copies of raw deflate for 1 MiB of zeros, each ending in a
 * full flush (so each copy is self-contained and identical): ~10.6 MB on the wire for 10 GiB.
 */
function gzipBomb(): { head: Buffer; group: Buffer; groups: number } {
  const segment = deflateRawSync(Buffer.alloc(MiB), { level: 9, finishFlush: zlib.Z_FULL_FLUSH });
  const head = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff]);
  return { head, group: Buffer.concat(Array.from({ length: 16 }, () => segment)), groups: 640 };
}

/**
 * brotli: a streaming compressor flushed after each 1 MiB of zeros settles into one identical
 * 13-byte meta-block per MiB; the stream is its first flush (with the header), then that block
 * 10,240 times: ~133 KB on the wire for 10 GiB.
 */
async function brotliBomb(): Promise<{ head: Buffer; group: Buffer; groups: number }> {
  const encoder = createBrotliCompress({ params: { [zlib.BROTLI_PARAM_QUALITY]: 5 } });
  const out: Buffer[] = [];
  encoder.on('data', (chunk: Buffer) => out.push(chunk));
  const flushed: Buffer[] = [];
  for (let i = 0; i < 8; i++) {
    encoder.write(Buffer.alloc(MiB));
    await new Promise<void>((resolve) => encoder.flush(zlib.BROTLI_OPERATION_FLUSH, () => resolve()));
    flushed.push(Buffer.concat(out.splice(0)));
  }
  encoder.destroy();
  const steady = flushed[7] as Buffer;
  expect(flushed[6]?.equals(steady)).toBe(true); // the repeated block really repeats
  return {
    head: Buffer.concat(flushed.slice(0, 7)),
    group: Buffer.concat(Array.from({ length: 64 }, () => steady)),
    groups: 160, // + the 7 MiB of the head: ~10 GiB
  };
}

describe('hostile servers', () => {
  let bombs: { gzip: ReturnType<typeof gzipBomb>; br: Awaited<ReturnType<typeof brotliBomb>> };
  beforeAll(async () => {
    bombs = { gzip: gzipBomb(), br: await brotliBomb() };
  });

  it('a tarpit (headers, then 1 byte every 200 ms forever) ends at the total deadline', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.flushHeaders();
      const timer = setInterval(() => {
        server.bytesWritten++;
        res.write('.');
      }, 200);
      res.on('close', () => clearInterval(timer));
    });
    const fetcher = makeFetcher({ timeouts: { connectMs: 1_000, firstByteMs: 1_000, idleMs: 1_000, totalMs: 2_000 } });
    const { value: error, ms } = await timed(() => fetchError(fetcher.fetch(`${server.origin}/tarpit`)));
    expect(error).toMatchObject({ code: 'ERR_FETCH_TIMEOUT', action: 'retry', details: { phase: 'request' } });
    expect(ms).toBeGreaterThanOrEqual(1_990);
    expect(ms).toBeLessThan(3_000); // deadline + 1 s
    await server.aborted;
    measurements.push({ case: 'tarpit body 1 B/200 ms', outcome: error.code, serverBytes: server.bytesWritten, ms });
  });

  it('a tarpit that trickles the status line and headers ends at the first-byte timeout', async () => {
    const head = Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Padding: ' + 'x'.repeat(1000) + '\r\n\r\n');
    let sent = 0;
    const tcp = await startTcpServer((socket) => {
      const timer = setInterval(() => {
        if (sent < head.length) socket.write(head.subarray(sent, ++sent));
      }, 200);
      socket.on('close', () => clearInterval(timer));
    });
    const fetcher = makeFetcher({ timeouts: { connectMs: 1_000, firstByteMs: 1_000, idleMs: 5_000, totalMs: 10_000 } });
    const { value: error, ms } = await timed(() => fetchError(fetcher.fetch(`http://127.0.0.1:${tcp.port}/`)));
    expect(error).toMatchObject({ code: 'ERR_FETCH_TIMEOUT', details: { phase: 'response' } });
    expect(ms).toBeLessThan(2_000);
    measurements.push({ case: 'tarpit headers 1 B/200 ms', outcome: error.code, serverBytes: sent, ms });
  });

  it('a server that accepts the connection and never answers hits the first-byte timeout', async () => {
    const tcp = await startTcpServer(() => undefined); // reads the request, says nothing
    const fetcher = makeFetcher({ timeouts: { connectMs: 1_000, firstByteMs: 500, idleMs: 5_000, totalMs: 10_000 } });
    const { value: error, ms } = await timed(() => fetchError(fetcher.fetch(`http://127.0.0.1:${tcp.port}/`)));
    expect(error).toMatchObject({ code: 'ERR_FETCH_TIMEOUT', action: 'retry', details: { phase: 'response' } });
    expect(error.message).toMatch(/first byte.*firstByteMs 500/);
    expect(ms).toBeGreaterThanOrEqual(490);
    expect(ms).toBeLessThan(1_500);
    expect(tcp.bytesReceived).toBeGreaterThan(0); // the request went out; nothing came back
    measurements.push({ case: 'silent server', outcome: error.code, serverBytes: 0, ms });
  });

  it.each(['gzip', 'br'] as const)('a %s bomb (10 GiB of zeros) is capped at maxBodyBytes in bounded bytes and time', async (encoding) => {
    const bomb = bombs[encoding];
    const server: TestServer = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': encoding });
      res.write(bomb.head);
      // No final block or trailer: the client never gets that far.
      pump(res, bomb.group, bomb.groups, server);
    });
    const fetcher = makeFetcher({ maxBodyBytes: 10 * MiB });
    const { value: result, ms } = await timed(() => fetcher.fetch(`${server.origin}/bomb`));
    expect(result.status).toBe(200);
    expect(result.body.length).toBe(10 * MiB);
    expect(result.body.every((byte) => byte === 0)).toBe(true);
    expect(result.truncated).toBe(true);
    expect(result.rawBytes).toBeLessThan(2 * MiB);
    expect(ms).toBeLessThan(5_000);
    const wireSize = bomb.head.length + bomb.group.length * bomb.groups;
    expect(result.rawBytes).toBeLessThan(wireSize); // stopped reading: the other ~10 GiB are never inflated
    // The gzip bomb is larger than the socket buffers, so the server sees the hang-up; the
    // 133 KB brotli bomb fits in them entirely and the server finishes writing first.
    if (encoding === 'gzip') await server.aborted;
    measurements.push({
      case: `${encoding} bomb → 10 GiB`,
      outcome: `${result.body.length} B kept, truncated`,
      wireBytes: result.rawBytes,
      serverBytes: server.bytesWritten + bomb.head.length,
      ms,
    });
  });

  it.each([
    ['gzip', Buffer.concat([gzipSync(Buffer.from('x'.repeat(1000))).subarray(0, 10), Buffer.from('garbage-garbage')])],
    ['gzip', Buffer.from('<html>not actually gzip</html>')],
    ['br', Buffer.from('this is not brotli at all, not even close')],
    ['deflate', Buffer.from('\x78\x9cgarbage that claims a zlib header')],
    ['gzip', Buffer.concat([gzipSync(Buffer.alloc(256 * KiB, 'a')).subarray(0, 2_000), Buffer.alloc(64 * KiB, 0xff)])], // breaks mid-body
  ])('a body that is not valid %s is a permanent failure, not a crash (%#)', async (encoding, body) => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': encoding });
      res.end(body);
    });
    const { value: error, ms } = await timed(() => fetchError(makeFetcher().fetch(`${server.origin}/`)));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'fail' });
    expect(ms).toBeLessThan(1_000);
    const errno = (error.details as { errno?: string } | undefined)?.errno;
    measurements.push({ case: `invalid ${encoding} body (${body.length} B)`, outcome: `${error.code} fail ${errno ?? ''}`, ms });
  });

  it('a 12 MB HTML page with a 10 MB cap keeps 10 MB, truncated', async () => {
    const server: TestServer = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': String(12 * MiB) });
      pump(res, Buffer.alloc(64 * KiB, '<p>'), (12 * MiB) / (64 * KiB), server);
    });
    const { value: result, ms } = await timed(() => makeFetcher({ maxBodyBytes: 10 * MiB }).fetch(`${server.origin}/big.html`));
    expect(result.body.length).toBe(10 * MiB);
    expect(result.truncated).toBe(true);
    expect(result.rawBytes).toBeGreaterThanOrEqual(10 * MiB);
    expect(result.rawBytes).toBeLessThan(12 * MiB);
    expect(ms).toBeLessThan(3_000);
    // Not `await server.aborted`: the ~2 MB past the cap can fit in the loopback socket buffers,
    // so the server may finish writing before the client hangs up.
    measurements.push({
      case: '12 MB HTML, 10 MB cap',
      outcome: `${result.body.length} B kept, truncated`,
      wireBytes: result.rawBytes,
      serverBytes: server.bytesWritten,
      ms,
    });
  });
});

describe('content-type gate (acceptBody)', () => {
  const htmlOnly = (type: string | null): boolean => type === 'text/html' || type === 'application/xhtml+xml';

  it('skips a 50 MB non-HTML body without downloading it: the server sees the abort, the fetch returns at once', async () => {
    const server: TestServer = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(50 * MiB), etag: '"big"' });
      pump(res, Buffer.alloc(64 * KiB, 1), (50 * MiB) / (64 * KiB), server);
    });
    const seen: Array<string | null> = [];
    const { value: result, ms } = await timed(() =>
      makeFetcher().fetch(`${server.origin}/movie`, {
        acceptBody: (type) => {
          seen.push(type);
          return htmlOnly(type);
        },
      }),
    );
    expect(seen).toEqual(['video/mp4']);
    expect(result).toMatchObject({ status: 200, contentType: 'video/mp4', bodySkipped: true, truncated: false, etag: '"big"' });
    expect(result.body.length).toBe(0);
    expect(result.headers['content-length']).toBe(String(50 * MiB));
    expect(ms).toBeLessThan(1_000);
    await server.aborted; // the client hung up
    expect(server.bytesWritten).toBeLessThan(50 * MiB);
    measurements.push({
      case: '50 MB video/mp4, acceptBody false',
      outcome: 'bodySkipped',
      wireBytes: result.rawBytes,
      serverBytes: server.bytesWritten,
      ms,
    });
  });

  it('reads the body when acceptBody says yes, and the socket stays reusable', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<p>wanted</p>');
    });
    const fetcher = makeFetcher();
    const first = await fetcher.fetch(`${server.origin}/a`, { acceptBody: htmlOnly });
    const second = await fetcher.fetch(`${server.origin}/b`, { acceptBody: htmlOnly });
    expect(first).toMatchObject({ bodySkipped: false, contentType: 'text/html' });
    expect(second.body.toString()).toBe('<p>wanted</p>');
    expect(server.connections).toBe(1);
  });

  it('passes null for a missing Content-Type, and a throwing acceptBody rejects the fetch with its error', async () => {
    const server = await startServer((_req, res) => res.end('untyped'));
    const fetcher = makeFetcher();
    const seen: Array<string | null> = [];
    await fetcher.fetch(`${server.origin}/`, { acceptBody: (type) => (seen.push(type), true) });
    expect(seen).toEqual([null]);
    const boom = new Error('policy exploded');
    await expect(
      fetcher.fetch(`${server.origin}/`, {
        acceptBody: () => {
          throw boom;
        },
      }),
    ).rejects.toBe(boom);
  });
});
