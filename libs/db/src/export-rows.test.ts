import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, PageRecord } from './database.js';
import { countPagesForExport, pagesForExport } from './export-rows.js';
import { NearDupIndex } from './near-dup.js';
import { pageRecord, testDatabase } from './testing/index.js';

const fp = (url: string): Buffer => createHash('sha256').update(url).digest().subarray(0, 16);
const page = (url: string, fetchedAt: number, overrides: Partial<PageRecord> = {}): PageRecord => pageRecord(url, { fetchedAt, ...overrides });

let db: Database;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ db, cleanup } = await testDatabase('export'));
  const pages = [
    ...Array.from({ length: 7 }, (_, i) => page(`http://a.example/${i}`, 1_000 * i)),
    page('http://b.example/', 500),
    page('http://b.example/failed', 600, { httpStatus: null, state: 'failed', contentHash: null }),
    page('http://a.example/moved', 700, { httpStatus: 301, redirectTo: 'http://a.example/0', contentHash: null, contentLength: 0 }),
    page('http://b.example/text', 800, {
      canonicalUrl: 'http://b.example/canonical',
      text: { title: 'A title', description: 'About it', language: 'en', wordCount: 42, textKey: 'sha256:' + 'a'.repeat(64) },
    }),
  ];
  await db.recordPages(pages);
  await new NearDupIndex(db).recordDuplicates([
    { urlHash: fp('http://a.example/5'), simhash: 5n, duplicateOf: fp('http://a.example/1'), duplicateKind: 'near', duplicateDistance: 2 },
  ]);
});
afterAll(() => cleanup());

const collect = async <T>(rows: AsyncIterable<T>): Promise<T[]> => {
  const out: T[] = [];
  for await (const row of rows) out.push(row);
  return out;
};

describe('pagesForExport', () => {
  it('yields every page with a status, in keyset batches, with its duplicate cluster’s first URL', async () => {
    const rows = await collect(pagesForExport(db, { batchSize: 3 }));
    expect(rows.map((r) => r.url).sort()).toEqual([...Array.from({ length: 7 }, (_, i) => `http://a.example/${i}`), 'http://a.example/moved', 'http://b.example/', 'http://b.example/text'].sort());
    expect(new Set(rows.map((r) => r.url)).size).toBe(rows.length);
    expect(rows.find((r) => r.url === 'http://a.example/5')).toMatchObject({ duplicateKind: 'near', duplicateOfUrl: 'http://a.example/1', duplicateDistance: 2 });
    expect(rows.find((r) => r.url === 'http://a.example/moved')).toMatchObject({ status: 301, redirectTo: 'http://a.example/0', contentHash: null });
    expect(rows.find((r) => r.url === 'http://a.example/0')).toMatchObject({ status: 200, contentType: 'text/html', charset: 'utf-8', contentLength: 20, duplicateKind: null, duplicateOfUrl: null });
    expect(rows[0]?.fetchedAt).toBeInstanceOf(Date);
  });

  it('filters by host and by fetch time', async () => {
    expect((await collect(pagesForExport(db, { host: 'b.example' }))).map((r) => r.url).sort()).toEqual(['http://b.example/', 'http://b.example/text']);
    const recent = await collect(pagesForExport(db, { host: 'a.example', since: new Date(4_000), batchSize: 1 }));
    expect(recent.map((r) => r.url).sort()).toEqual(['http://a.example/4', 'http://a.example/5', 'http://a.example/6']);
  });

  it('counts what it yields', async () => {
    expect(await countPagesForExport(db)).toBe((await collect(pagesForExport(db))).length);
    expect(await countPagesForExport(db, { host: 'a.example', since: new Date(4_000) })).toBe(3);
  });

  it('carries what the page says about itself', async () => {
    const [row] = await collect(pagesForExport(db, { host: 'b.example', since: new Date(800) }));
    expect(row).toMatchObject({ title: 'A title', description: 'About it', language: 'en', wordCount: 42, textKey: `sha256:${'a'.repeat(64)}`, canonicalUrl: 'http://b.example/canonical' });
  });
});
