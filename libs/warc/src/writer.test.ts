import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CDXIndexer, WARCParser } from 'warcio';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { base32, payloadDigest } from './records.js';
import { readRecordAt, readWarc } from './testing/index.js';
import { cdxjPath, WarcWriter } from './writer.js';

/** SHA-1 base32 computed here, independently of the writer. */
const sha1b32 = (bytes: Uint8Array): string => `sha1:${base32(createHash('sha1').update(bytes).digest())}`;

const T0 = Date.UTC(2024, 4, 17, 10, 30, 0, 250);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trawl-warc-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const writerIn = (options: Partial<ConstructorParameters<typeof WarcWriter>[0]> = {}): WarcWriter =>
  new WarcWriter({ dir, prefix: 'test', hostname: 'crawler-1', pid: 4242, now: () => T0, ...options });

/** warcio's own CDXJ indexer over a file: the reference our index must match. */
async function warcioCdxj(path: string, filename: string): Promise<string[]> {
  const indexer = new CDXIndexer({ format: 'cdxj' });
  const lines: string[] = [];
  for await (const result of indexer.iterIndex([{ filename, reader: createReadStream(path) }])) {
    lines.push(indexer.serializeCDXJ(result));
  }
  return lines.sort();
}

describe('base32', () => {
  it.each([
    ['', ''],
    ['f', 'MY======'],
    ['fo', 'MZXQ===='],
    ['foo', 'MZXW6==='],
    ['foob', 'MZXW6YQ='],
    ['fooba', 'MZXW6YTB'],
    ['foobar', 'MZXW6YTBOI======'],
  ])('RFC 4648 vector %j → %s', (input, expected) => {
    expect(base32(Buffer.from(input))).toBe(expected);
  });
});

describe('WarcWriter', () => {
  it('writes warcinfo, response, request, metadata and revisit records with correct digests', async () => {
    const writer = writerIn();
    const body = Buffer.from('<html><body>Hello, archive</body></html>');
    const { response, request } = await writer.writeExchange({
      url: 'http://example.com/page?b=2&a=1',
      fetchedAt: T0,
      ip: '127.0.0.9',
      request: { method: 'GET', headers: { 'User-Agent': 'trawl/0.1', Accept: 'text/html' } },
      response: {
        status: 200,
        headers: { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip', 'content-length': '61', 'set-cookie': ['a=1', 'b=2'], 'x-evil': 'x\r\nWARC-Type: forged' },
        body,
        bodyForm: 'decoded',
      },
    });
    expect(request).not.toBeNull();
    const meta = await writer.writeMetadata({ url: 'http://example.com/page?b=2&a=1', date: T0, fields: { 'near-duplicate-of': 'http://example.com/other' }, concurrentTo: response.recordId });
    const { revisit } = await writer.writeRevisit({
      url: 'http://mirror.example/page',
      fetchedAt: T0 + 60_000,
      refersTo: { url: response.url, date: response.date, recordId: response.recordId },
      payloadDigest: payloadDigest(body),
      response: { status: 200, headers: { 'content-type': 'text/html' } },
    });
    const files = await writer.close();
    expect(files).toHaveLength(1);
    const path = files[0] ?? '';

    const records = await readWarc(path);
    expect(records.map((r) => r.type)).toEqual(['warcinfo', 'response', 'request', 'metadata', 'revisit']);
    const [info, resp, req, md, rev] = records;

    expect(info?.header('WARC-Filename')).toBe('test-20240517103000250-00000-crawler-1-4242.warc.gz');
    expect(info?.payload.toString()).toContain('format: WARC File Format 1.1');
    expect(info?.record.warcHeaders.statusline).toBe('WARC/1.1');

    expect(resp?.url).toBe('http://example.com/page?b=2&a=1');
    expect(resp?.header('WARC-Date')).toBe('2024-05-17T10:30:00.250Z');
    expect(resp?.header('WARC-IP-Address')).toBe('127.0.0.9');
    expect(resp?.payload).toEqual(body);
    expect(resp?.header('WARC-Payload-Digest')).toBe(sha1b32(body));
    expect(resp?.header('WARC-Payload-Digest')).toBe(response.payloadDigest);
    // A decoded body: the encoding header is kept under another name, the length is the body's.
    const httpHeaders = resp?.record.httpHeaders?.headers;
    expect(httpHeaders?.get('content-encoding')).toBeFalsy();
    expect(httpHeaders?.get('x-archive-orig-content-encoding')).toBe('gzip');
    expect(httpHeaders?.get('content-length')).toBe(String(body.length));
    expect(resp?.record.httpHeaders?.statusline).toBe('HTTP/1.1 200 OK');
    expect(httpHeaders?.get('x-evil')).toBe('x WARC-Type: forged');

    expect(req?.url).toBe(resp?.url);
    expect(req?.header('WARC-Concurrent-To')).toBe(response.recordId);
    expect(req?.record.httpHeaders?.statusline).toBe('GET /page?b=2&a=1 HTTP/1.1');

    expect(md?.header('Content-Type')).toBe('application/warc-fields');
    expect(md?.header('WARC-Concurrent-To')).toBe(response.recordId);
    expect(md?.payload.toString()).toBe('near-duplicate-of: http://example.com/other\r\n');
    expect(meta.type).toBe('metadata');

    expect(rev?.url).toBe('http://mirror.example/page');
    expect(rev?.header('WARC-Profile')).toBe('http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
    expect(rev?.header('WARC-Refers-To-Target-URI')).toBe(response.url);
    expect(rev?.header('WARC-Refers-To-Date')).toBe(response.date);
    expect(rev?.header('WARC-Refers-To')).toBe(response.recordId);
    expect(rev?.header('WARC-Payload-Digest')).toBe(sha1b32(body));
    expect(rev?.payload.length).toBe(0);
    expect(revisit.payloadDigest).toBe(sha1b32(body));
  });

  it('block digests cover the HTTP headers and payload as stored', async () => {
    const writer = writerIn();
    await writer.writeExchange({
      url: 'http://example.com/',
      fetchedAt: T0,
      request: { method: 'GET', headers: { Host: 'example.com' } },
      response: { status: 404, headers: { 'content-type': 'text/plain' }, body: Buffer.from('not here'), bodyForm: 'as-transferred' },
    });
    const [path] = await writer.close();
    let checked = 0;
    for await (const record of new WARCParser(createReadStream(path ?? ''), { parseHttp: false })) {
      const block = await record.readFully(false);
      if (record.warcType !== 'warcinfo') {
        expect(record.warcBlockDigest).toBe(sha1b32(block));
        checked += 1;
      }
      expect(Number(record.warcHeader('Content-Length'))).toBe(block.length);
    }
    expect(checked).toBe(2);
  });

  it('a conversion record holds another form of a capture (a rendered DOM) and refers to it', async () => {
    const writer = writerIn();
    const { response } = await writer.writeExchange({
      url: 'http://example.com/app',
      fetchedAt: T0,
      response: { status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from('<div id="root"></div>'), bodyForm: 'decoded' },
    });
    const dom = Buffer.from('<html><body><div id="root"><a href="/x">x</a></div></body></html>');
    const written = await writer.writeConversion({ url: 'http://example.com/app', date: T0 + 500, contentType: 'text/html; charset=utf-8', body: dom, refersTo: response.recordId });
    expect(written.type).toBe('conversion');
    const [path] = await writer.close();
    const conversion = (await readWarc(path ?? '')).find((r) => r.type === 'conversion');
    expect(conversion?.header('WARC-Refers-To')).toBe(response.recordId);
    expect(conversion?.header('Content-Type')).toBe('text/html; charset=utf-8');
    expect(conversion?.header('WARC-Block-Digest')).toBe(sha1b32(dom));
    expect(conversion?.payload.toString()).toBe(dom.toString());
  });

  it('marks a truncated body, and keeps an as-transferred body byte for byte', async () => {
    const writer = writerIn();
    const raw = randomBytes(300);
    await writer.writeExchange({
      url: 'http://example.com/big',
      fetchedAt: T0,
      response: { status: 200, headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': '5000' }, body: raw, bodyForm: 'as-transferred', truncated: true },
    });
    const [path] = await writer.close();
    const [, resp] = await readWarc(path ?? '');
    expect(resp?.header('WARC-Truncated')).toBe('length');
    expect(resp?.payload).toEqual(raw);
    expect(resp?.record.httpHeaders?.headers.get('content-length')).toBe('5000');
  });

  it('writes a CDXJ index identical to warcio’s, whose offsets point at the records', async () => {
    const writer = writerIn();
    const pages = ['http://www.example.com/b', 'http://example.com/a?z=1&y=2', 'https://sub.example.org:8443/x'];
    const written = [];
    for (const [i, url] of pages.entries()) {
      written.push(
        (
          await writer.writeExchange({
            url,
            fetchedAt: T0 + i * 1000,
            request: { method: 'GET', headers: { Accept: '*/*' } },
            response: { status: 200 + i, headers: { 'Content-Type': i === 2 ? 'application/json' : 'text/html; charset=utf-8' }, body: Buffer.from(`page ${i}`), bodyForm: 'decoded' },
          })
        ).response,
      );
    }
    await writer.writeRevisit({
      url: 'http://example.com/again',
      fetchedAt: T0 + 9000,
      refersTo: { url: pages[0] ?? '', date: T0 },
      payloadDigest: payloadDigest(Buffer.from('page 0')),
      response: { status: 304, headers: {} },
    });
    const [path] = await writer.close();
    const name = 'test-20240517103000250-00000-crawler-1-4242.warc.gz';
    expect(path).toBe(join(dir, name));

    const ours = (await readFile(cdxjPath(path ?? ''), 'utf8')).split(/(?<=\n)/);
    expect(ours).toHaveLength(4);
    expect(ours).toEqual([...ours].sort());
    expect(ours).toEqual(await warcioCdxj(path ?? '', name));

    for (const line of ours) {
      const [surt, timestamp, json] = line.trimEnd().split(' ', 3) as [string, string, string];
      const entry = JSON.parse(line.slice(surt.length + timestamp.length + 2)) as Record<string, string>;
      expect(json.startsWith('{')).toBe(true);
      const record = await readRecordAt(path ?? '', Number(entry['offset']), Number(entry['length']));
      expect(record.url).toBe(entry['url']);
      expect(record.header('WARC-Date')?.replace(/[-:T]/g, '').slice(0, 14)).toBe(timestamp);
      expect(['response', 'revisit']).toContain(record.type);
    }
    const first = written[1];
    expect(ours.some((l) => l.startsWith('com,example)/a?y=2&z=1 20240517103001 ') && l.includes(`"offset":"${first?.offset}"`))).toBe(true);
  });

  it('rolls files by size: each starts with warcinfo, exchanges are never split, no .open left', async () => {
    const writer = writerIn({ maxFileBytes: 8 * 1024 });
    const bodies = Array.from({ length: 12 }, () => randomBytes(3000));
    for (const [i, body] of bodies.entries()) {
      await writer.writeExchange({
        url: `http://example.com/${i}`,
        fetchedAt: T0 + i,
        request: { method: 'GET', headers: {} },
        response: { status: 200, headers: { 'Content-Type': 'application/octet-stream' }, body, bodyForm: 'as-transferred' },
      });
    }
    const files = await writer.close();
    expect(files.length).toBeGreaterThanOrEqual(4);
    expect(files.map((f) => f.slice(dir.length + 1))).toEqual(
      files.map((_, serial) => `test-20240517103000250-${String(serial).padStart(5, '0')}-crawler-1-4242.warc.gz`),
    );
    expect((await readdir(dir)).filter((f) => f.endsWith('.open'))).toEqual([]);

    const seen: string[] = [];
    for (const file of files) {
      const records = await readWarc(file);
      expect(records[0]?.type).toBe('warcinfo');
      expect(records[0]?.header('WARC-Filename')).toBe(file.slice(dir.length + 1));
      // Each response is followed by its request in the same file.
      const rest = records.slice(1).map((r) => `${r.type} ${r.url}`);
      for (let i = 0; i < rest.length; i += 2) expect(rest[i + 1]).toBe(rest[i]?.replace('response', 'request'));
      for (const r of records.filter((x) => x.type === 'response')) {
        seen.push(r.url ?? '');
        expect(r.header('WARC-Payload-Digest')).toBe(sha1b32(r.payload));
        expect(bodies[Number(r.url?.split('/').pop())]).toEqual(r.payload);
      }
      // A file closes once it has reached the limit: only its last exchange may cross it.
      const size = (await stat(file)).size;
      expect(size).toBeLessThan(8 * 1024 + 2 * 3500);
      if (file !== files.at(-1)) expect(size).toBeGreaterThanOrEqual(8 * 1024);
      expect((await readFile(cdxjPath(file), 'utf8')).trim().split('\n')).toHaveLength(rest.length / 2);
    }
    expect(seen).toEqual(bodies.map((_, i) => `http://example.com/${i}`));
  });

  it('serializes concurrent calls and refuses writes after close', async () => {
    const writer = writerIn();
    const urls = Array.from({ length: 20 }, (_, i) => `http://example.com/c${i}`);
    await Promise.all(
      urls.map((url) => writer.writeExchange({ url, fetchedAt: T0, response: { status: 200, headers: {}, body: Buffer.from(url), bodyForm: 'decoded' } })),
    );
    const [path] = await writer.close();
    const records = await readWarc(path ?? '');
    expect(records.slice(1).map((r) => r.payload.toString()).sort()).toEqual([...urls].sort());
    await expect(writer.writeMetadata({ url: urls[0] ?? '', date: T0, fields: {} })).rejects.toThrow(/closed/);
    expect(await writer.close()).toEqual([path]);
  });

  it('an unused writer creates no file', async () => {
    expect(await writerIn().close()).toEqual([]);
    expect(await readdir(dir)).toEqual([]);
  });
});
