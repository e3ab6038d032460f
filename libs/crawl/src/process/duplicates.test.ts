import { type Database, NearDupIndex } from '@trawl/db';
import { pageRecord, testDatabase } from '@trawl/db/testing';
import { fingerprint } from '@trawl/url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DuplicateQuery, Duplicates } from './duplicates.js';

/**
 * The duplicate classifier against real PostgreSQL: the content-hash lookup, the banded SimHash
 * index, and the window between a page's classification and its record.
 */
let db: Database;
let cleanup: () => Promise<void>;
let index: NearDupIndex;
beforeAll(async () => {
  ({ db, cleanup } = await testDatabase('dups'));
  index = new NearDupIndex(db);
});
afterAll(() => cleanup());

const FP = 0x1234_5678_9abc_def0n;
const T = 1_700_000_000_000;
let n = 0;
const query = (url: string, contentHash: string, simhash: bigint | null, extra: Partial<DuplicateQuery> = {}): DuplicateQuery => ({
  urlHash: fingerprint(url),
  url,
  simhash,
  contentHash,
  fetchedAt: T + n++,
  recrawl: false,
  maxDistance: 3,
  ...extra,
});
const make = () => new Duplicates(index, () => Date.now(), { maxBatch: 100, maxWaitMs: 1, rememberBodies: 100 });

describe('Duplicates', () => {
  it('a new body is nobody\'s duplicate; a copy in the same batch is an exact duplicate of it', async () => {
    const dups = make();
    const [first, copy, near] = await Promise.all([
      dups.classify(query('http://a.example/1', 'body-1', FP)),
      dups.classify(query('http://mirror.example/1', 'body-1', FP)),
      dups.classify(query('http://a.example/1-print', 'body-1p', FP ^ 0b101n)),
    ]);
    expect(first).toEqual({ verdict: null, ofUrl: null, earlier: null });
    expect(copy).toEqual({ verdict: { kind: 'exact', of: fingerprint('http://a.example/1'), distance: 0 }, ofUrl: 'http://a.example/1', earlier: { url: 'http://a.example/1', capturedAt: expect.any(Number) } });
    expect(near).toEqual({ verdict: { kind: 'near', of: fingerprint('http://a.example/1'), distance: 2 }, ofUrl: 'http://a.example/1', earlier: null });
  });

  it('a copy classified before the first page\'s record is written still finds it (and its capture time)', async () => {
    const dups = make();
    const first = query('http://b.example/1', 'body-b', FP ^ (0xffffn << 20n));
    await dups.classify(first);
    // Later batches: the first page is only in the index and in this process's memory.
    const copy = await dups.classify(query('http://b.example/1;jsessionid=X', 'body-b', first.simhash));
    expect(copy).toMatchObject({ verdict: { kind: 'exact' }, ofUrl: 'http://b.example/1', earlier: { url: 'http://b.example/1', capturedAt: first.fetchedAt } });
    const near = await dups.classify(query('http://b.example/archive/1', 'body-b2', (first.simhash as bigint) ^ 1n));
    expect(near).toMatchObject({ verdict: { kind: 'near', of: fingerprint('http://b.example/1'), distance: 1 }, ofUrl: 'http://b.example/1' });
  });

  it('finds the first page in PostgreSQL across processes, and names a near cluster\'s first page from `urls`', async () => {
    const url = 'http://c.example/1';
    const fp = FP ^ (0xffffn << 40n);
    await db.insertDiscovered([{ hash: fingerprint(url), url, host: 'c.example', depth: 0, from: null }]);
    await db.recordPages([pageRecord(url, { contentHash: 'body-c', fetchedAt: T - 5000, dedup: { simhash: fp, duplicateOf: null, duplicateKind: null, duplicateDistance: null } })]);
    await index.index([{ urlHash: fingerprint(url), simhash: fp }]);
    const other = make(); // another process: nothing in memory
    const exact = await other.classify(query('http://mirror.example/c1', 'body-c', fp));
    expect(exact).toEqual({ verdict: { kind: 'exact', of: fingerprint(url), distance: 0 }, ofUrl: url, earlier: { url, capturedAt: T - 5000 } });
    const near = await other.classify(query('http://c.example/print/1', 'body-c-print', fp ^ 0b11n));
    expect(near).toMatchObject({ verdict: { kind: 'near', distance: 2 }, ofUrl: url, earlier: null });
  });

  it('an unchanged re-crawl refers to its own earlier capture; a re-crawl that became a duplicate leaves the index', async () => {
    const url = 'http://d.example/1';
    const fp = FP ^ (0xffffn << 4n);
    await db.recordPages([pageRecord(url, { contentHash: 'body-d', fetchedAt: T - 9000 })]);
    await index.index([{ urlHash: fingerprint(url), simhash: fp }]);
    const dups = make();
    const again = await dups.classify(query(url, 'body-d', fp, { recrawl: true }));
    expect(again).toEqual({ verdict: null, ofUrl: null, earlier: { url, capturedAt: T - 9000 } });
    expect(await index.findNear(fp, 0)).toHaveLength(1);

    // It now carries another page's body: an exact duplicate, and no longer a cluster head.
    const other = 'http://d.example/2';
    await db.recordPages([pageRecord(other, { contentHash: 'body-d2', fetchedAt: T - 20_000 })]);
    const changed = await dups.classify(query(url, 'body-d2', fp, { recrawl: true }));
    expect(changed).toMatchObject({ verdict: { kind: 'exact', of: fingerprint(other) }, ofUrl: other, earlier: { url: other, capturedAt: T - 20_000 } });
    expect(await index.findNear(fp, 0)).toEqual([]);
  });

  it('a body without text is checked for exact copies only', async () => {
    const dups = make();
    const [pdf, copy] = await Promise.all([dups.classify(query('http://e.example/a.pdf', 'pdf-1', null)), dups.classify(query('http://e.example/b.pdf', 'pdf-1', null))]);
    expect(pdf.verdict).toBeNull();
    expect(copy.verdict).toMatchObject({ kind: 'exact', of: fingerprint('http://e.example/a.pdf') });
  });

  it('the policy\'s distance applies', async () => {
    const dups = make();
    const fp = FP ^ (0xffffn << 30n);
    await dups.classify(query('http://f.example/1', 'body-f', fp));
    expect((await dups.classify(query('http://f.example/2', 'body-f2', fp ^ 0b11n, { maxDistance: 1 }))).verdict).toBeNull();
  });

  it('a head counts as indexed for the next batches while its index rows are still being written', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slowWrites = {
      lookup: index.lookup.bind(index),
      urlsOf: index.urlsOf.bind(index),
      index: async (entries: Parameters<NearDupIndex['index']>[0]) => {
        await held;
        await index.index(entries);
      },
    };
    const dups = new Duplicates(slowWrites, () => Date.now(), { maxBatch: 1, maxWaitMs: 0, rememberBodies: 100 });
    const fp = FP ^ (0xffffn << 10n);
    const head = dups.classify(query('http://g.example/1', 'body-g', fp));
    const copy = dups.classify(query('http://g.example/print/1', 'body-g-print', fp ^ 1n));
    // The copy is answered while the head's rows are still held back.
    expect(await copy).toMatchObject({ verdict: { kind: 'near', of: fingerprint('http://g.example/1'), distance: 1 }, ofUrl: 'http://g.example/1' });
    expect(await index.findNear(fp, 0)).toEqual([]);
    release();
    expect((await head).verdict).toBeNull();
    expect(await index.findNear(fp, 0)).toHaveLength(1);
  });

  it('batches look up at the same time, and still classify in order', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let lookups = 0;
    const slowFirstLookup = {
      urlsOf: index.urlsOf.bind(index),
      index: index.index.bind(index),
      lookup: async (...args: Parameters<NearDupIndex['lookup']>) => {
        lookups += 1;
        if (lookups === 1) await held;
        return index.lookup(...args);
      },
    };
    const dups = new Duplicates(slowFirstLookup, () => Date.now(), { maxBatch: 1, maxWaitMs: 0, rememberBodies: 100 });
    const fp = FP ^ (0xffffn << 44n);
    const head = dups.classify(query('http://h.example/1', 'body-h', fp));
    const copy = dups.classify(query('http://h.example/print/1', 'body-h-print', fp ^ 0b11n));
    // The second batch's lookups go out while the first batch's are still unanswered.
    for (let i = 0; lookups < 2 && i < 100; i++) await new Promise((r) => setTimeout(r, 10));
    expect(lookups).toBe(2);
    release();
    expect((await head).verdict).toBeNull();
    expect(await copy).toMatchObject({ verdict: { kind: 'near', of: fingerprint('http://h.example/1'), distance: 2 }, ofUrl: 'http://h.example/1' });
  });

  it('a batch reads with one statement, and writes its new heads with one more', async () => {
    const statements: string[] = [];
    const counted = new NearDupIndex({
      options: db.options,
      pool: {
        query: (sql: string, params: unknown[]) => {
          statements.push(sql);
          return db.pool.query(sql, params);
        },
      } as unknown as Database['pool'],
    });
    const dups = new Duplicates(counted, () => Date.now(), { maxBatch: 100, maxWaitMs: 1, rememberBodies: 100 });
    const fp = FP ^ (0xffffn << 24n);
    const answers = await Promise.all([
      dups.classify(query('http://i.example/1', 'body-i', fp)),
      dups.classify(query('http://i.example/2', 'body-i2', fp ^ 1n)),
      dups.classify(query('http://i.example/3.pdf', 'pdf-i', null)),
    ]);
    expect(answers.map((a) => a.verdict?.kind ?? null)).toEqual([null, 'near', null]);
    // The lookup and the index write; every duplicate is named from the batch, so no `urls` read.
    expect(statements).toHaveLength(2);
  });
});
