import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BodySource, type ExportRow, exportWarc } from './export.js';
import { base32 } from './records.js';
import { readWarc } from './testing/index.js';
import { cdxjPath } from './writer.js';

const sha256 = (body: Buffer): string => createHash('sha256').update(body).digest('hex');
const sha1b32 = (body: Buffer): string => `sha1:${base32(createHash('sha1').update(body).digest())}`;

/** Bodies by storage key, the way a ContentStore answers `get`. */
class Bodies implements BodySource {
  private readonly byKey = new Map<string, Buffer>();
  put(body: Buffer): { storageKey: string; contentHash: string } {
    const contentHash = sha256(body);
    this.byKey.set(`sha256:${contentHash}`, body);
    return { storageKey: `sha256:${contentHash}`, contentHash };
  }
  async get(key: string): Promise<Buffer | null> {
    return this.byKey.get(key) ?? null;
  }
}

const T0 = Date.UTC(2024, 0, 2, 3, 4, 5);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trawl-warc-export-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function* rowsOf(rows: ExportRow[]): AsyncGenerator<ExportRow> {
  for (const row of rows) yield row;
}

describe('exportWarc', () => {
  it('archives pages from the store: responses, revisits for repeated bodies, metadata for duplicates', async () => {
    const bodies = new Bodies();
    const article = Buffer.from('<html><body><p>The article.</p></body></html>');
    const near = Buffer.from('<html><body><p>The article!</p></body></html>');
    const a = bodies.put(article);
    const n = bodies.put(near);
    const base = { contentType: 'text/html', charset: 'utf-8', redirectTo: null, truncated: false };
    const rows: ExportRow[] = [
      { ...base, url: 'http://a.example/article', status: 200, fetchedAt: T0, ...a },
      { ...base, url: 'http://mirror.example/article', status: 200, fetchedAt: T0 + 1000, ...a, duplicateKind: 'exact', duplicateOfUrl: 'http://a.example/article' },
      { ...base, url: 'http://a.example/print', status: 200, fetchedAt: T0 + 2000, ...n, duplicateKind: 'near', duplicateOfUrl: 'http://a.example/article', duplicateDistance: 2 },
      { ...base, url: 'http://a.example/old', status: 304, fetchedAt: T0 + 3000, ...bodies.put(Buffer.from('unchanged since last time')) },
      { ...base, url: 'http://a.example/moved', status: 301, fetchedAt: T0 + 4000, contentType: null, storageKey: null, contentHash: null, redirectTo: 'http://a.example/article' },
      { ...base, url: 'http://a.example/failed', status: null, fetchedAt: T0 + 5000, storageKey: null, contentHash: null },
      { ...base, url: 'http://a.example/gone-from-store', status: 200, fetchedAt: T0 + 6000, storageKey: `sha256:${'0'.repeat(64)}`, contentHash: '0'.repeat(64) },
      { ...base, url: 'http://a.example/video.mp4', status: 200, fetchedAt: T0 + 7000, contentType: 'video/mp4', storageKey: null, contentHash: null, bodySkipped: true },
      { ...base, url: 'http://a.example/near-not-kept', status: 200, fetchedAt: T0 + 8000, storageKey: null, contentHash: 'ab'.repeat(32), contentLength: 512, duplicateKind: 'near', duplicateOfUrl: 'http://a.example/article' },
    ];

    const summary = await exportWarc(rowsOf(rows), bodies, { dir, prefix: 'export', hostname: 'h', pid: 1, now: () => T0 });
    expect(summary).toMatchObject({ responses: 4, revisits: 1, metadata: 2, skipped: 3, missingBodies: 1 });
    expect(summary.files).toHaveLength(1);

    const records = await readWarc(summary.files[0] ?? '');
    expect(records.map((r) => `${r.type} ${r.url ?? ''}`)).toEqual([
      'warcinfo ',
      'response http://a.example/article',
      'revisit http://mirror.example/article',
      'response http://a.example/print',
      'metadata http://a.example/print',
      'response http://a.example/old',
      'metadata http://a.example/old',
      'response http://a.example/moved',
    ]);
    const [info, original, revisit, print, printMeta, old, oldMeta, moved] = records;
    expect(info?.payload.toString()).toContain('HTTP headers are reconstructed');

    expect(original?.payload).toEqual(article);
    expect(original?.header('WARC-Payload-Digest')).toBe(sha1b32(article));
    expect(original?.header('WARC-Date')).toBe(new Date(T0).toISOString());
    expect(original?.record.httpHeaders?.headers.get('content-type')).toBe('text/html; charset=utf-8');

    // The mirror's identical body: a revisit pointing at the first capture.
    expect(revisit?.header('WARC-Refers-To-Target-URI')).toBe('http://a.example/article');
    expect(revisit?.header('WARC-Refers-To-Date')).toBe(original?.header('WARC-Date'));
    expect(revisit?.header('WARC-Refers-To')).toBe(original?.header('WARC-Record-ID'));
    expect(revisit?.header('WARC-Payload-Digest')).toBe(sha1b32(article));

    expect(print?.payload).toEqual(near);
    expect(printMeta?.header('WARC-Concurrent-To')).toBe(print?.header('WARC-Record-ID'));
    expect(printMeta?.payload.toString()).toBe('near-duplicate-of: http://a.example/article\r\nsimhash-distance: 2\r\n');

    // A 304 without its 200 in the export: the body it confirmed, said so in metadata.
    expect(old?.record.httpHeaders?.statusline).toBe('HTTP/1.1 200 OK');
    expect(old?.payload.toString()).toBe('unchanged since last time');
    expect(oldMeta?.payload.toString()).toContain('revalidated: 304 Not Modified');

    expect(moved?.record.httpHeaders?.statusline).toBe('HTTP/1.1 301 Moved Permanently');
    expect(moved?.record.httpHeaders?.headers.get('location')).toBe('http://a.example/article');
    expect(moved?.payload.length).toBe(0);

    const cdxj = (await readFile(cdxjPath(summary.files[0] ?? ''), 'utf8')).trim().split('\n');
    expect(cdxj).toHaveLength(5);
    expect(cdxj.some((l) => l.startsWith('example,mirror)/article ') && l.includes('"mime":"warc/revisit"'))).toBe(true);
  });

  it('an exact duplicate whose first page is not exported is archived in full, and noted', async () => {
    const bodies = new Bodies();
    const copy = bodies.put(Buffer.from('same bytes'));
    const summary = await exportWarc(
      [{ url: 'http://b.example/copy', status: 200, contentType: 'text/plain', fetchedAt: T0, ...copy, duplicateKind: 'exact', duplicateOfUrl: 'http://elsewhere.example/' }],
      bodies,
      { dir, now: () => T0 },
    );
    expect(summary).toMatchObject({ responses: 1, revisits: 0, metadata: 1 });
    const records = await readWarc(summary.files[0] ?? '');
    expect(records[1]?.payload.toString()).toBe('same bytes');
    expect(records[2]?.payload.toString()).toBe('exact-duplicate-of: http://elsewhere.example/\r\n');
  });

  it('rolls over while exporting and forgets old bodies within its memory bound', async () => {
    const bodies = new Bodies();
    const rows: ExportRow[] = [];
    for (let i = 0; i < 30; i++) {
      const body = randomBytes(2000);
      rows.push({ url: `http://c.example/${i}`, status: 200, contentType: 'text/plain', fetchedAt: T0 + i, ...bodies.put(body) });
    }
    // With room for two bodies, the first is long forgotten (written in full); the last is not.
    rows.push({ ...rows[0]!, url: 'http://c.example/again', fetchedAt: T0 + 100 });
    rows.push({ ...rows[29]!, url: 'http://c.example/again-recent', fetchedAt: T0 + 101 });
    const summary = await exportWarc(rows, bodies, { dir, now: () => T0, maxFileBytes: 16 * 1024, rememberBodies: 2 });
    expect(summary).toMatchObject({ responses: 31, revisits: 1 });
    expect(summary.files.length).toBeGreaterThan(1);
    const all = (await Promise.all(summary.files.map((f) => readWarc(f)))).flat();
    expect(all.filter((r) => r.type === 'warcinfo')).toHaveLength(summary.files.length);
    expect(all.find((r) => r.url === 'http://c.example/again-recent')?.type).toBe('revisit');
  });

  it('follows a rendered page\'s capture with its DOM as a conversion record referring to it; a DOM the store lost is left out', async () => {
    const bodies = new Bodies();
    const shell = Buffer.from('<html><body><div id="root"></div><script src="/app.js"></script></body></html>');
    const dom = Buffer.from('<html><body><div id="root"><a href="/a">a</a></div><script src="/app.js"></script></body></html>');
    const base = { status: 200, contentType: 'text/html', charset: 'utf-8' };
    const rows: ExportRow[] = [
      { ...base, url: 'http://spa.example/', fetchedAt: T0, ...bodies.put(shell), renderedKey: bodies.put(dom).storageKey },
      // The same shell on another page: a revisit, and its DOM refers to that.
      { ...base, url: 'http://spa.example/2', fetchedAt: T0 + 1000, ...bodies.put(shell), renderedKey: bodies.put(Buffer.from('<html>two</html>')).storageKey },
      { ...base, url: 'http://spa.example/3', fetchedAt: T0 + 2000, ...bodies.put(Buffer.from('three')), renderedKey: `sha256:${'0'.repeat(64)}` },
      { ...base, url: 'http://plain.example/', fetchedAt: T0 + 3000, ...bodies.put(Buffer.from('plain')), renderedKey: null },
    ];
    const summary = await exportWarc(rowsOf(rows), bodies, { dir, now: () => T0 });
    expect(summary).toMatchObject({ responses: 3, revisits: 1, conversions: 2, missingBodies: 0 });
    const records = (await readWarc(summary.files[0] ?? '')).filter((r) => r.type !== 'warcinfo');
    expect(records.map((r) => `${r.type} ${r.url ?? ''}`)).toEqual([
      'response http://spa.example/',
      'conversion http://spa.example/',
      'revisit http://spa.example/2',
      'conversion http://spa.example/2',
      'response http://spa.example/3',
      'response http://plain.example/',
    ]);
    const [response, conversion, revisit, second] = records;
    expect(response?.payload).toEqual(shell);
    expect(conversion?.payload).toEqual(dom);
    expect(conversion?.header('WARC-Target-URI')).toBe('http://spa.example/');
    expect(conversion?.header('WARC-Refers-To')).toBe(response?.header('WARC-Record-ID'));
    expect(conversion?.header('Content-Type')).toBe('text/html; charset=utf-8');
    expect(conversion?.header('WARC-Date')).toBe(new Date(T0).toISOString());
    expect(second?.header('WARC-Refers-To')).toBe(revisit?.header('WARC-Record-ID'));
    expect(second?.payload.toString()).toBe('<html>two</html>');
  });
});
