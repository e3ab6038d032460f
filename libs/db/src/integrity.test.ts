import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, type PageRecord, type UrlState } from './database.js';
import { discovered, fp, record, TEST_DATABASE_URL, testDatabase } from './testing/index.js';

// The database boundary against real PostgreSQL: one bad row never fails a batch, concurrent
// writers never deadlock, and a late record never moves a URL backwards.
let db: Database;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ db, cleanup } = await testDatabase('integrity'));
});
afterAll(() => cleanup());

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T = 1_700_000_000_000;

async function urlRow(url: string): Promise<{ state: UrlState; updated_at: Date } | undefined> {
  const { rows } = await db.pool.query(`SELECT state, updated_at FROM "${db.options.schema}".urls WHERE url_hash = $1`, [fp(url)]);
  return rows[0];
}

async function pageRow(url: string): Promise<Record<string, unknown> | undefined> {
  const { rows } = await db.pool.query(`SELECT * FROM "${db.options.schema}".crawled_pages WHERE url_hash = $1`, [fp(url)]);
  return rows[0];
}

describe('text PostgreSQL cannot store', () => {
  it('is refused by the server when sent raw (what a crawl hit before the boundary cleaned it)', async () => {
    await expect(db.pool.query('SELECT $1::text', ['a\u0000b'])).rejects.toMatchObject({ code: '22021' });
  });

  it('a canonical URL with a NUL byte: the page is recorded, the NUL dropped', async () => {
    const url = 'http://nul.example/p/2';
    const result = await db.recordPages([
      record('http://nul.example/p/1'),
      record(url, { canonicalUrl: 'http://nul.example/p/1\u0000tail', errorMessage: 'lone \uD83D surrogate', etag: '"\u0000e"' }),
    ]);
    expect(result).toEqual({ written: 2, superseded: [], rejected: [] });
    expect(await pageRow(url)).toMatchObject({ canonical_url: 'http://nul.example/p/1tail', error_message: 'lone \uFFFD surrogate', etag: '"e"', state: 'done' });
    expect((await urlRow(url))?.state).toBe('done');
  });

  it('every text column of every write is cleaned', async () => {
    const dirty = (s: string) => `${s}\u0000\uDE00`;
    const url = 'http://dirty.example/a\u0000b';
    const { inserted, rejected } = await db.insertDiscovered([{ ...discovered('http://dirty.example/x'), url, host: dirty('dirty.example'), skipReason: dirty('robots') }]);
    expect(rejected).toEqual([]);
    expect(inserted).toHaveLength(1);
    const { rows } = await db.pool.query(`SELECT url, host, skip_reason FROM "${db.options.schema}".urls WHERE url_hash = $1`, [fp('http://dirty.example/x')]);
    expect(rows[0]).toEqual({ url: 'http://dirty.example/ab', host: 'dirty.example\uFFFD', skip_reason: 'robots\uFFFD' });

    const textFields = ['url', 'host', 'contentType', 'contentHash', 'storageKey', 'redirectTo', 'canonicalUrl', 'errorCode', 'errorMessage', 'etag', 'lastModified', 'charset'] as const;
    const page = record('http://dirty.example/page');
    const dirtied = { ...page, ...Object.fromEntries(textFields.map((f) => [f, dirty(f)])) } as PageRecord;
    expect((await db.recordPages([dirtied])).written).toBe(1);
    const stored = await pageRow('http://dirty.example/page');
    const columns = ['url', 'host', 'content_type', 'content_hash', 'storage_key', 'redirect_to', 'canonical_url', 'error_code', 'error_message', 'etag', 'last_modified', 'charset'];
    expect(columns.map((c) => stored?.[c])).toEqual(textFields.map((f) => `${f}\uFFFD`));

    const sitemaps = await db.recordSitemaps(dirty('https://dirty.example'), ['https://dirty.example/s.xml\u0000', 'https://dirty.example/s.xml']);
    expect(sitemaps).toEqual({ written: 1, rejected: [] });
    expect(await db.sitemapsOf(dirty('https://dirty.example'))).toEqual(['https://dirty.example/s.xml']);
  });
});

describe('a row PostgreSQL refuses costs only itself', () => {
  it('recordPages writes the rest of the batch and returns the bad records with their reason', async () => {
    const urls = Array.from({ length: 60 }, (_, i) => `http://bad.example/${i}`);
    const bad = new Map<number, [Partial<PageRecord>, string]>([
      [7, [{ httpStatus: 99_999 }, '22003']], // smallint out of range
      [21, [{ hash: Buffer.alloc(15, 1) }, '23514']], // the 16-byte fingerprint check
      [40, [{ contentLength: 2 ** 40 }, '22003']], // integer out of range
      [41, [{ fetchedAt: Number.NaN }, '23502']], // no fetch time: NOT NULL
    ]);
    const records = urls.map((url, i) => record(url, bad.get(i)?.[0] ?? {}));
    const result = await db.recordPages(records);
    expect(result.written).toBe(56);
    expect(result.superseded).toEqual([]);
    expect(result.rejected.map((r) => [r.url, r.sqlState]).sort()).toEqual([...bad].map(([i, [, code]]) => [urls[i], code]).sort());
    for (const r of result.rejected) expect(r.reason).toMatch(/^ERR_DATABASE: PostgreSQL refused the row: .+ \[SQLSTATE 2[23]\w{3}\]$/);
    expect(result.rejected.find((r) => r.url === urls[21])?.hash).toEqual(Buffer.alloc(15, 1));
    expect(result.rejected.map((r) => r.index)).toEqual([7, 21, 40, 41]);
    const good = urls.filter((_, i) => !bad.has(i));
    expect((await db.existing(good.map(fp))).size).toBe(56);
    expect((await db.existing([urls[7], urls[40], urls[41]].map((u) => fp(u as string)))).size).toBe(0);
  });

  it('insertDiscovered inserts the rest and returns the refused URL', async () => {
    const rows = [discovered('http://bad.example/d1'), { ...discovered('http://bad.example/d2'), hash: Buffer.alloc(3) }, discovered('http://bad.example/d3')];
    const { inserted, rejected } = await db.insertDiscovered(rows);
    expect(inserted.map((h) => h.toString('hex')).sort()).toEqual([fp('http://bad.example/d1'), fp('http://bad.example/d3')].map((h) => h.toString('hex')).sort());
    expect(rejected).toMatchObject([{ url: 'http://bad.example/d2', sqlState: '23514' }]);
  });

  it('errors that are not about a row are thrown, as before', async () => {
    const closed = new Database({ url: TEST_DATABASE_URL, schema: db.options.schema });
    await closed.close();
    await expect(closed.recordPages([record('http://bad.example/closed')])).rejects.toThrow();
    const nowhere = new Database({ url: 'postgres://postgres@127.0.0.1:1/none', schema: db.options.schema });
    await expect(nowhere.insertDiscovered([discovered('http://bad.example/nowhere')])).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await nowhere.close();
  });
});

describe('concurrent writers', () => {
  it('two batches with overlapping keys in opposite orders never deadlock (40P01)', async () => {
    // Two pools, so the batches really run at once on separate connections.
    const other = new Database({ url: TEST_DATABASE_URL, schema: db.options.schema, poolSize: 2 });
    const keys = Array.from({ length: 400 }, (_, i) => `http://lock.example/${i}`);
    await db.insertDiscovered(keys.map((u) => discovered(u)));
    const started = Date.now();
    let rounds = 0;
    try {
      while (rounds < 25 && Date.now() - started < 15_000) {
        rounds += 1;
        const at = T + rounds * 1000;
        const ascending = keys.map((u) => record(u, { fetchedAt: at }));
        const descending = [...ascending].reverse();
        const fresh = Array.from({ length: 300 }, (_, i) => discovered(`http://lock.example/r${rounds}/${i}`));
        const results = await Promise.all([
          db.recordPages(ascending),
          other.recordPages(descending),
          db.insertDiscovered(fresh),
          other.insertDiscovered([...fresh].reverse()),
          db.markQueued(fresh.map((d) => d.hash)),
          other.markQueued([...fresh].reverse().map((d) => d.hash)),
        ]);
        expect(results[0].rejected).toEqual([]);
        expect(results[1].rejected).toEqual([]);
        expect(results[2].inserted.length + results[3].inserted.length).toBe(300);
      }
    } finally {
      await other.close();
    }
    expect(rounds).toBeGreaterThanOrEqual(5);
  }, 60_000);
});

describe('a late, stale record never moves a URL backwards', () => {
  let n = 0;
  type Step = Partial<PageRecord>;
  const done = (fetchedAt: number, over: Step = {}): Step => ({ state: 'done', fetchedAt, nextCrawlAt: fetchedAt + DAY, ...over });
  const failed = (fetchedAt: number): Step => ({ state: 'failed', fetchedAt, httpStatus: null, contentHash: null, errorCode: 'ERR_FETCH_TIMEOUT', nextCrawlAt: null });
  const skipped = (fetchedAt: number): Step => ({ state: 'skipped', fetchedAt, httpStatus: null, contentHash: null, errorCode: 'ERR_ROBOTS_DISALLOWED', nextCrawlAt: null });

  // [case, the records written one call after another, expected urls.state, expected fetched_at]
  it.each<[string, Step[][], UrlState, number]>([
    ['an older failed record after done changes nothing', [[done(T)], [failed(T - HOUR)]], 'done', T],
    ['an older done record after done changes nothing', [[done(T, { contentHash: 'new' })], [done(T - HOUR, { contentHash: 'old' })]], 'done', T],
    ['a newer failed record of the same generation (before next_crawl_at) changes nothing', [[done(T)], [failed(T + HOUR)]], 'done', T],
    ['a newer skipped record of the same generation changes nothing', [[done(T)], [skipped(T + HOUR)]], 'done', T],
    ['a failed re-crawl (at or after next_crawl_at) is recorded', [[done(T)], [failed(T + DAY)]], 'failed', T + DAY],
    ['a done page without next_crawl_at (a 404) is never replaced by failed', [[done(T, { httpStatus: 404, nextCrawlAt: null })], [failed(T + 10 * DAY)]], 'done', T],
    ['done after failed moves forward', [[failed(T)], [done(T + HOUR)]], 'done', T + HOUR],
    ['an older done after a newer failed changes nothing (older never wins)', [[failed(T + HOUR)], [done(T)]], 'failed', T + HOUR],
    ['a newer failed after failed is recorded', [[failed(T)], [failed(T + HOUR)]], 'failed', T + HOUR],
    ['the same record again is applied (idempotent replay)', [[done(T)], [done(T)]], 'done', T],
    ['done then failed of one fetch in one batch: done stays', [[done(T), failed(T)]], 'done', T],
    ['failed then done of one fetch in one batch: done wins', [[failed(T), done(T)]], 'done', T],
    ['a newer done re-crawl replaces done', [[done(T)], [done(T + 2 * DAY)]], 'done', T + 2 * DAY],
  ])('%s', async (_name, calls, state, fetchedAt) => {
    const url = `http://stale.example/${(n += 1)}`;
    await db.insertDiscovered([discovered(url)]);
    await db.markQueued([fp(url)]);
    for (const batch of calls) await db.recordPages(batch.map((step) => record(url, step)));
    expect((await urlRow(url))?.state).toBe(state);
    const page = await pageRow(url);
    expect((page?.fetched_at as Date).getTime()).toBe(fetchedAt);
    expect(page?.state).toBe(state);
  });

  it('a superseded record touches neither row, and is counted as superseded', async () => {
    const url = 'http://stale.example/untouched';
    await db.recordPages([record(url)]);
    const [urlBefore, pageBefore] = [await urlRow(url), await pageRow(url)];
    const result = await db.recordPages([record('http://stale.example/other'), record(url, failed(T + HOUR))]);
    expect(result).toEqual({ written: 1, superseded: [1], rejected: [] });
    expect(await urlRow(url)).toEqual(urlBefore);
    expect(await pageRow(url)).toEqual(pageBefore);
  });

  it('setState never moves a done URL', async () => {
    const [a, b] = ['http://stale.example/set-a', 'http://stale.example/set-b'];
    await db.insertDiscovered([discovered(a), discovered(b)]);
    await db.recordPages([record(a)]);
    await db.setState([fp(a), fp(b)], 'failed');
    expect((await urlRow(a))?.state).toBe('done');
    expect((await urlRow(b))?.state).toBe('failed');
  });
});
