import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, PageRecord } from './database.js';
import { NearDupIndex } from './near-dup.js';
import { pageRecord, TEST_DATABASE_URL, testDatabase } from './testing/index.js';

const fp = (name: string): Buffer => createHash('sha256').update(name).digest().subarray(0, 16);

/** A fetched page for crawled_pages with the given body hash. */
const page = (url: string, contentHash: string, fetchedAt: number): PageRecord =>
  pageRecord(url, { depth: 0, contentHash, storageKey: `sha256:${contentHash}`, fetchedAt, contentLength: 10, charset: null });

/** `base` with the given bit positions (0 = lowest) flipped, as a signed 64-bit value. */
const flip = (base: bigint, ...bits: number[]): bigint => BigInt.asIntN(64, bits.reduce((v, bit) => v ^ (1n << BigInt(bit)), base));

let db: Database;
let cleanup: () => Promise<void>;
let index: NearDupIndex;
beforeAll(async () => {
  ({ db, cleanup } = await testDatabase('neardup'));
  index = new NearDupIndex(db);
});
afterAll(() => cleanup());

describe('NearDupIndex', () => {
  const BASE = -0x0123456789abcdefn; // negative: the signed bigint range is exercised

  it('finds fingerprints within the distance through their bands, with exact distances', async () => {
    const entries = [
      { name: 'same', simhash: BASE },
      { name: 'd1', simhash: flip(BASE, 5) },
      { name: 'd2-one-band', simhash: flip(BASE, 1, 2) },
      { name: 'd3-three-bands', simhash: flip(BASE, 3, 20, 40) },
      { name: 'd3-top-bit', simhash: flip(BASE, 63, 47, 31) },
      { name: 'd4-all-bands', simhash: flip(BASE, 0, 16, 32, 48) },
      { name: 'd4-one-band', simhash: flip(BASE, 0, 1, 2, 3) },
      { name: 'far', simhash: ~BASE },
    ];
    await index.index(entries.map((e) => ({ urlHash: fp(e.name), simhash: e.simhash })));

    const found = await index.findNear(BASE, 3);
    const names = new Map(entries.map((e) => [fp(e.name).toString('hex'), e.name]));
    const byDistanceThenName = found
      .map((m) => [names.get(m.urlHash.toString('hex')), m.distance] as const)
      .sort((a, b) => a[1] - b[1] || String(a[0]).localeCompare(String(b[0])));
    expect(byDistanceThenName).toEqual([
      ['same', 0],
      ['d1', 1],
      ['d2-one-band', 2],
      ['d3-three-bands', 3],
      ['d3-top-bit', 3],
    ]);
    expect(found[0]?.simhash).toBe(BASE);
    expect(found[0]?.indexedAt).toBeGreaterThan(Date.now() - 60_000);

    expect((await index.findNear(BASE, 1)).map((m) => m.distance)).toEqual([0, 1]);
    expect(await index.findNear(BASE, 0)).toHaveLength(1);
    // The asking page is left out (a re-crawl finds its own fingerprint otherwise).
    expect((await index.findNear(BASE, 0, fp('same')))).toEqual([]);
    await expect(index.findNear(BASE, 4)).rejects.toThrow(RangeError);
  });

  it('answers many fingerprints in one call, in query order', async () => {
    const a = 0x1111222233334444n;
    const b = 0x5555666677778888n;
    await index.index([
      { urlHash: fp('many-a'), simhash: flip(a, 9) },
      { urlHash: fp('many-b'), simhash: b },
    ]);
    const [forA, forNothing, forB] = await index.findNearMany([{ simhash: a }, { simhash: 0x7fff0000ffff0000n }, { simhash: flip(b, 62, 61) }], 3);
    expect(forA?.map((m) => [m.urlHash, m.distance])).toEqual([[fp('many-a'), 1]]);
    expect(forNothing).toEqual([]);
    expect(forB?.map((m) => [m.urlHash, m.distance])).toEqual([[fp('many-b'), 2]]);
    expect(await index.findNearMany([], 3)).toEqual([]);
  });

  it('re-indexing a page replaces its fingerprint; null removes it', async () => {
    const url = fp('moving');
    const before = 0x0a0a0a0a0a0a0a0an;
    const after = 0x7070707070707070n;
    await index.index([{ urlHash: url, simhash: before }]);
    await index.index([{ urlHash: url, simhash: after }, { urlHash: url, simhash: after }]);
    expect((await index.findNear(before, 3)).some((m) => m.urlHash.equals(url))).toBe(false);
    expect((await index.findNear(after, 3)).map((m) => m.urlHash)).toEqual([url]);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.options.schema}".simhash_bands WHERE url_hash = $1`, [url]);
    expect(rows[0].n).toBe(4);

    // One band unchanged: that row is kept, the others replaced.
    await index.index([{ urlHash: url, simhash: flip(after, 0, 16, 32) }]);
    expect((await index.findNear(after, 3)).map((m) => m.distance)).toEqual([3]);

    await index.index([{ urlHash: url, simhash: null }]);
    expect(await index.findNear(after, 3)).toEqual([]);
  });

  it('never scans the table: lookups read the (band, value) index', async () => {
    // 20,000 random fingerprints (80,000 band rows) so the planner has a real table to weigh.
    let state = 987654321;
    const next = (): bigint => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return BigInt(state);
    };
    for (let batch = 0; batch < 4; batch++) {
      await index.index(
        Array.from({ length: 5000 }, (_, i) => ({ urlHash: fp(`bulk-${batch}-${i}`), simhash: BigInt.asIntN(64, (next() << 32n) | next()) })),
      );
    }
    await db.pool.query(`ANALYZE "${db.options.schema}".simhash_bands`);

    // One connection, so the statistics we read are the ones our lookups produced.
    const single = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
    try {
      const onOne = new NearDupIndex({ pool: single, options: db.options });
      const scans = async (): Promise<{ seq: number; idx: number }> => {
        await single.query('SELECT pg_stat_force_next_flush()');
        await single.query('SELECT pg_stat_clear_snapshot()');
        const { rows } = await single.query<{ seq: string; idx: string }>(
          `SELECT seq_scan AS seq, idx_scan AS idx FROM pg_stat_user_tables WHERE relid = $1::regclass`,
          [`"${db.options.schema}".simhash_bands`],
        );
        return { seq: Number(rows[0]?.seq), idx: Number(rows[0]?.idx) };
      };
      const before = await scans();
      for (let i = 0; i < 20; i++) await onOne.findNear(BigInt.asIntN(64, (next() << 32n) | next()), 3);
      await onOne.findNearMany(Array.from({ length: 50 }, () => ({ simhash: BigInt.asIntN(64, (next() << 32n) | next()) })), 3);
      await onOne.lookup(['c1', 'c2'], Array.from({ length: 50 }, () => ({ simhash: BigInt.asIntN(64, (next() << 32n) | next()), exclude: fp('bulk-0-0') })), 3);
      const after = await scans();
      expect(after.seq).toBe(before.seq);
      expect(after.idx).toBeGreaterThan(before.idx);
    } finally {
      await single.end();
    }
  });

  it('firstWithContent: the earliest page with a body that is not itself an exact duplicate', async () => {
    await db.recordPages([
      page('http://dup.example/late', 'c1', 3_000),
      page('http://dup.example/first', 'c1', 2_000),
      page('http://dup.example/earliest-but-exact', 'c1', 1_000),
      { ...page('http://dup.example/other', 'c2', 1_000), lastChangedAt: 400 },
    ]);
    await index.recordDuplicates([
      { urlHash: fp('http://dup.example/earliest-but-exact'), simhash: null, duplicateOf: fp('http://dup.example/first'), duplicateKind: 'exact', duplicateDistance: 0 },
    ]);
    const first = await index.firstWithContent(['c1', 'c2', 'c1', 'missing']);
    expect([...first.keys()].sort()).toEqual(['c1', 'c2']);
    expect(first.get('c1')).toEqual({ urlHash: fp('http://dup.example/first'), url: 'http://dup.example/first', capturedAt: new Date(2_000) });
    // Unchanged since 400: that is when its body was captured.
    expect(first.get('c2')).toEqual({ urlHash: fp('http://dup.example/other'), url: 'http://dup.example/other', capturedAt: new Date(400) });
    expect((await index.firstWithContent([])).size).toBe(0);
  });

  describe('lookup: body hashes and fingerprints in one statement', () => {
    const L = 0x0f0f_1234_5678_9abcn;

    it('answers both, as firstWithContent and findNearMany would, leaving out the asking page', async () => {
      await db.recordPages([
        page('http://lookup.example/first', 'l1', 2_000),
        page('http://lookup.example/late', 'l1', 3_000),
        page('http://lookup.example/earliest-but-exact', 'l1', 1_000),
        { ...page('http://lookup.example/unchanged', 'l2', 1_000), lastChangedAt: 500 },
      ]);
      await index.recordDuplicates([
        { urlHash: fp('http://lookup.example/earliest-but-exact'), simhash: null, duplicateOf: fp('http://lookup.example/first'), duplicateKind: 'exact', duplicateDistance: 0 },
      ]);
      await index.index([
        { urlHash: fp('lookup-self'), simhash: L },
        { urlHash: fp('lookup-d1'), simhash: flip(L, 7) },
      ]);

      const hashes = ['l1', 'missing', 'l2', 'l1'];
      const queries = [{ simhash: L, exclude: fp('lookup-self') }, { simhash: ~L }, { simhash: flip(L, 7, 33) }];
      const { first, near } = await index.lookup(hashes, queries, 3);
      expect(first).toEqual(
        new Map([
          ['l1', { urlHash: fp('http://lookup.example/first'), url: 'http://lookup.example/first', capturedAt: new Date(2_000) }],
          ['l2', { urlHash: fp('http://lookup.example/unchanged'), url: 'http://lookup.example/unchanged', capturedAt: new Date(500) }],
        ]),
      );
      // The page asking (a re-crawl) does not find its own fingerprint, only the other one.
      expect(near.map((matches) => matches.map((m) => [m.urlHash, m.simhash, m.distance]))).toEqual([
        [[fp('lookup-d1'), flip(L, 7), 1]],
        [],
        [
          [fp('lookup-d1'), flip(L, 7), 1],
          [fp('lookup-self'), L, 2],
        ],
      ]);
      expect(near[0]?.[0]?.indexedAt).toBeGreaterThan(Date.now() - 60_000);
      expect({ first, near }).toEqual({ first: await index.firstWithContent(hashes), near: await index.findNearMany(queries, 3) });
    });

    it('sorts each list nearest first, then earliest indexed, then by url_hash', async () => {
      const S = 0x3c3c_0000_ffff_1234n;
      const entries = [
        { name: 'sort-d2-early', simhash: flip(S, 1, 2), indexedAt: 1_000 },
        { name: 'sort-d1-late', simhash: flip(S, 3), indexedAt: 2_000 },
        { name: 'sort-d2-late-a', simhash: flip(S, 17, 18), indexedAt: 2_000 },
        { name: 'sort-d2-late-b', simhash: flip(S, 33, 34), indexedAt: 2_000 },
      ];
      await index.index(entries.map((e) => ({ urlHash: fp(e.name), simhash: e.simhash })));
      await db.pool.query(
        `UPDATE "${db.options.schema}".simhash_bands AS b SET indexed_at = to_timestamp(x.at / 1000.0)
         FROM unnest($1::bytea[], $2::bigint[]) AS x(h, at) WHERE b.url_hash = x.h`,
        [entries.map((e) => fp(e.name)), entries.map((e) => e.indexedAt)],
      );
      const { near } = await index.lookup([], [{ simhash: S }], 3);
      const tiedByUrl = [fp('sort-d2-late-a'), fp('sort-d2-late-b')].sort(Buffer.compare);
      expect(near[0]?.map((m) => [m.urlHash, m.distance, m.indexedAt])).toEqual([
        [fp('sort-d1-late'), 1, 2_000],
        [fp('sort-d2-early'), 2, 1_000],
        [tiedByUrl[0], 2, 2_000],
        [tiedByUrl[1], 2, 2_000],
      ]);
    });

    it('works with only one part asked, and sends nothing when both are empty', async () => {
      await db.recordPages([page('http://lookup.example/only', 'l3', 1_000)]);
      await index.index([{ urlHash: fp('lookup-only'), simhash: ~L }]);

      const onlyBodies = await index.lookup(['l3'], [], 3);
      expect([...onlyBodies.first.keys()]).toEqual(['l3']);
      expect(onlyBodies.near).toEqual([]);

      const onlyFingerprints = await index.lookup([], [{ simhash: flip(~L, 40) }, { simhash: L ^ 0x00ff_00ff_00ff_00ffn }], 3);
      expect(onlyFingerprints.first).toEqual(new Map());
      expect(onlyFingerprints.near.map((matches) => matches.map((m) => m.urlHash))).toEqual([[fp('lookup-only')], []]);

      const silent = new NearDupIndex({
        options: db.options,
        pool: { query: () => Promise.reject(new Error('no statement expected')) } as unknown as Database['pool'],
      });
      expect(await silent.lookup([], [], 3)).toEqual({ first: new Map(), near: [] });
      await expect(silent.lookup(['l3'], [], 4)).rejects.toThrow(RangeError);
      await expect(silent.lookup([], [], -1)).rejects.toThrow(RangeError);
    });
  });

  it('recordDuplicates writes simhash and the duplicate columns; inconsistent ones are refused', async () => {
    const url = 'http://dup.example/near';
    await db.recordPages([page(url, 'c3', 5_000)]);
    await index.recordDuplicates([
      { urlHash: fp(url), simhash: -42n, duplicateOf: fp('http://dup.example/first'), duplicateKind: 'near', duplicateDistance: 2 },
    ]);
    const { rows } = await db.pool.query(
      `SELECT simhash, duplicate_of, duplicate_kind, duplicate_distance FROM "${db.options.schema}".crawled_pages WHERE url_hash = $1`,
      [fp(url)],
    );
    expect(rows[0]).toEqual({ simhash: '-42', duplicate_of: fp('http://dup.example/first'), duplicate_kind: 'near', duplicate_distance: 2 });

    await expect(
      index.recordDuplicates([{ urlHash: fp(url), simhash: 1n, duplicateOf: fp('x'), duplicateKind: null, duplicateDistance: null }]),
    ).rejects.toThrow(/crawled_pages_duplicate_consistent/);

    await index.recordDuplicates([{ urlHash: fp(url), simhash: 7n, duplicateOf: null, duplicateKind: null, duplicateDistance: null }]);
    const { rows: cleared } = await db.pool.query(`SELECT simhash, duplicate_of FROM "${db.options.schema}".crawled_pages WHERE url_hash = $1`, [fp(url)]);
    expect(cleared[0]).toEqual({ simhash: '7', duplicate_of: null });
  });
});

describe('NearDupIndex lookups for naming and archiving', () => {
  it('urlsOf names known URLs, recorded or only discovered', async () => {
    await db.insertDiscovered([{ hash: fp('http://u.example/only-known'), url: 'http://u.example/only-known', host: 'u.example', depth: 1, from: null }]);
    await db.recordPages([page('http://u.example/recorded', 'u-body', 1_000)]);
    const urls = await index.urlsOf([fp('http://u.example/only-known'), fp('http://u.example/recorded'), fp('nobody')]);
    expect(urls).toEqual(
      new Map([
        [fp('http://u.example/only-known').toString('latin1'), 'http://u.example/only-known'],
        [fp('http://u.example/recorded').toString('latin1'), 'http://u.example/recorded'],
      ]),
    );
    expect(await index.urlsOf([])).toEqual(new Map());
  });

  it('storedCaptures gives the body a page holds and when it was captured', async () => {
    await db.recordPages([page('http://u.example/captured', 'c-body', 5_000)]);
    const captures = await index.storedCaptures([fp('http://u.example/captured'), fp('nobody')]);
    expect([...captures.values()]).toEqual([{ url: 'http://u.example/captured', contentHash: 'c-body', storageKey: 'sha256:c-body', capturedAt: new Date(5_000) }]);
  });
});

describe('NearDupIndex plans', () => {
  /** Every node of an EXPLAIN (FORMAT JSON) plan. */
  const nodes = (plan: Record<string, unknown>): Record<string, unknown>[] => [
    plan,
    ...((plan.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(nodes),
  ];

  it('reads the bands by index ranges, never by scanning the table, even before its statistics catch up', async () => {
    const { db: fresh, cleanup: drop } = await testDatabase('neardupplan');
    try {
      // A table that grew since it was last analyzed (the state of a crawl's first minutes).
      await fresh.pool.query(`ANALYZE "${fresh.options.schema}".simhash_bands`);
      const filler = new NearDupIndex(fresh);
      const fingerprint = (i: number): bigint => createHash('sha256').update(`page ${i}`).digest().readBigInt64BE(0);
      for (let start = 0; start < 3000; start += 500) {
        await filler.index(Array.from({ length: 500 }, (_, k) => ({ urlHash: fp(`plan ${start + k}`), simhash: fingerprint(start + k) })));
      }
      // The same statements, explained instead of run.
      const plans: Record<string, unknown>[] = [];
      const explaining = new NearDupIndex({
        options: fresh.options,
        pool: {
          query: async (sql: string, params: unknown[]) => {
            const { rows } = await fresh.pool.query<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
            plans.push(rows[0]?.['QUERY PLAN'][0].Plan ?? {});
            return { rows: [] };
          },
        } as unknown as Database['pool'],
      });
      const batch = Array.from({ length: 20 }, (_, i) => fingerprint(i * 7));
      // A classified batch's lookup (bodies and fingerprints), the fingerprints alone, and the write.
      await explaining.lookup(
        batch.map((_, i) => `body ${i}`),
        batch.map((simhash, i) => ({ simhash, exclude: fp(`plan ${i}`) })),
        3,
      );
      await explaining.findNearMany(batch.map((simhash) => ({ simhash })), 3);
      await explaining.index(batch.map((simhash, i) => ({ urlHash: fp(`plan ${i}`), simhash })));
      expect(plans).toHaveLength(3);
      for (const plan of plans) {
        const onBands = nodes(plan).filter((n) => n['Relation Name'] === 'simhash_bands');
        expect(onBands.length).toBeGreaterThan(0);
        expect(onBands.map((n) => n['Node Type'])).not.toContain('Seq Scan');
      }
    } finally {
      await drop();
    }
  });
});
