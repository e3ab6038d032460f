import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database.js';
import { discovered, fp, record, TEST_DATABASE_URL, testDatabase } from './testing/index.js';
import pg from 'pg';
import { Database as Db, probePostgres, TRAWL_SCHEMA_MARK } from './database.js';

let db: Database;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ db, cleanup } = await testDatabase('db'));
});
afterAll(() => cleanup());

describe('Database', () => {
  it('migrations are idempotent and safe to run concurrently', async () => {
    await Promise.all([db.migrate(), db.migrate(), db.migrate()]);
    const other = new Db({ url: TEST_DATABASE_URL, schema: db.options.schema });
    await other.migrate();
    await other.close();
  });

  it('a schema that holds every migration is opened without the migration lock; one not known to be current waits for it', async () => {
    await db.migrate();
    const schema = db.options.schema;
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    const other = new Db({ url: TEST_DATABASE_URL, schema });
    // node-pg-migrate's lock (one id for every schema: held briefly, other tests' migrations wait).
    const LOCK = 7241865325823964;
    /** Runs migrate() while the lock is held: whether it finished without it; `before` runs first, `restore` before the lock is let go. */
    const underLock = async (before: () => Promise<unknown>, restore: () => Promise<unknown>): Promise<boolean> => {
      await admin.query(`SELECT pg_advisory_lock(${LOCK})`);
      let done = false;
      let pending: Promise<void> = Promise.resolve();
      try {
        await before();
        pending = other.migrate().then(() => {
          done = true;
        });
        await Promise.race([pending, new Promise((resolve) => setTimeout(resolve, 300))]);
        return done;
      } finally {
        await restore();
        await admin.query(`SELECT pg_advisory_unlock(${LOCK})`);
        await pending;
      }
    };
    try {
      // Current: one read, no lock.
      expect(await underLock(async () => undefined, async () => undefined)).toBe(true);
      // A migration's row missing: the runner takes the lock, so it waits (the row is put back before it gets it).
      const last = (await admin.query<{ name: string }>(`SELECT name FROM "${schema}".pgmigrations ORDER BY id DESC LIMIT 1`)).rows[0]?.name;
      expect(last).toBeDefined();
      expect(
        await underLock(
          () => admin.query(`DELETE FROM "${schema}".pgmigrations WHERE name = $1`, [last]),
          () => admin.query(`INSERT INTO "${schema}".pgmigrations (name, run_on) VALUES ($1, now())`, [last]),
        ),
      ).toBe(false);
      // The mark missing (as before a first migration completes): the same.
      expect(
        await underLock(
          () => admin.query(`COMMENT ON SCHEMA "${schema}" IS NULL`),
          () => admin.query(`COMMENT ON SCHEMA "${schema}" IS '${TRAWL_SCHEMA_MARK}'`),
        ),
      ).toBe(false);
      // Back to current.
      expect(await underLock(async () => undefined, async () => undefined)).toBe(true);
    } finally {
      await other.close();
      await admin.end();
    }
  });

  it('drops only a schema trawl made: another one that TRAWL_NAMESPACE names is refused, and never marked', async () => {
    const name = `t_foreign_${process.pid}_${Date.now() % 100_000}`;
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${name}; CREATE TABLE ${name}.invoices (id int)`);
      const foreign = new Db({ url: TEST_DATABASE_URL, schema: name });
      try {
        await foreign.migrate(); // trawl's tables beside someone else's: allowed, but the schema stays theirs
        await expect(foreign.dropSchema()).rejects.toMatchObject({ code: 'ERR_CONFIG_INVALID', message: expect.stringMatching(/not made by trawl/) });
        expect((await admin.query(`SELECT to_regclass('${name}.invoices') AS t`)).rows[0].t).not.toBeNull();
      } finally {
        await foreign.close();
      }
      // trawl's own schema is marked, and dropped.
      const own = new Db({ url: TEST_DATABASE_URL, schema: `${name}_own` });
      await own.migrate();
      expect((await admin.query(`SELECT obj_description('${name}_own'::regnamespace, 'pg_namespace') AS c`)).rows[0].c).toBe(TRAWL_SCHEMA_MARK);
      await own.dropSchema();
      await own.close();
      expect((await admin.query(`SELECT 1 FROM pg_namespace WHERE nspname = '${name}_own'`)).rowCount).toBe(0);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      await admin.end();
    }
  });

  it('discovery inserts only unknown URLs and says which it inserted', async () => {
    const a = discovered('http://a.example/1');
    const b = discovered('http://a.example/2');
    const { inserted: first } = await db.insertDiscovered([a, b, a]);
    expect(first.map((h) => h.toString('hex')).sort()).toEqual([a.hash, b.hash].map((h) => h.toString('hex')).sort());
    const { inserted: second } = await db.insertDiscovered([a, discovered('http://a.example/3')]);
    expect(second.map((h) => h.toString('hex'))).toEqual([fp('http://a.example/3').toString('hex')]);
    const known = await db.existing([a.hash, fp('http://nowhere.example/')]);
    expect(known.has(a.hash.toString('latin1'))).toBe(true);
    expect(known.size).toBe(1);
  });

  it('concurrent discoverers of one URL: exactly one inserts it', async () => {
    const url = discovered('http://race.example/x');
    const results = await Promise.all(Array.from({ length: 8 }, () => db.insertDiscovered([url])));
    expect(results.filter((r) => r.inserted.length === 1).length).toBe(1);
  });

  it('finds URLs inserted but never confirmed queued', async () => {
    const lost = discovered('http://crash.example/lost');
    const fine = discovered('http://crash.example/fine');
    await db.insertDiscovered([lost, fine]);
    await db.markQueued([fine.hash]);
    const leftovers = await db.unqueued(0, 100);
    const urls = leftovers.map((r) => r.url);
    expect(urls).toContain('http://crash.example/lost');
    expect(urls).not.toContain('http://crash.example/fine');
    expect(await db.unqueued(60_000, 100)).toEqual([]);
  });

  it('records pages (upsert) and their history, and sets url state', async () => {
    const url = 'http://rec.example/p';
    await db.insertDiscovered([discovered(url)]);
    await db.recordPages([record(url), record(url, { httpStatus: 304 })]);
    let history = await db.pageHistory([fp(url)]);
    expect(history.get(fp(url).toString('latin1'))).toEqual({ contentHash: 'abc', changeFrequencyS: 86_400, lastChangedAt: 1_700_000_000_000 });
    await db.recordPages([record(url, { contentHash: 'def', changeFrequencyS: 3600, etag: null })]);
    history = await db.pageHistory([fp(url)]);
    expect(history.get(fp(url).toString('latin1'))?.contentHash).toBe('def');
    const { rows } = await db.pool.query(`SELECT etag, http_status FROM "${db.options.schema}".crawled_pages WHERE url_hash = $1`, [fp(url)]);
    expect(rows[0]).toEqual({ etag: '"e1"', http_status: 200 });
    const counts = await db.counts();
    expect(counts.pages).toBeGreaterThanOrEqual(1);
    expect(counts.urls.done).toBeGreaterThanOrEqual(1);
  });

  it('records whether a page was rendered, why, and where its DOM is; a 304 keeps what the last full visit said', async () => {
    const url = 'http://render.example/app';
    const read = async () =>
      (await db.pool.query(`SELECT rendered, render_reason, rendered_key FROM "${db.options.schema}".crawled_pages WHERE url_hash = $1`, [fp(url)])).rows[0] as unknown;
    await db.recordPages([record(url)]);
    expect(await read()).toEqual({ rendered: false, render_reason: null, rendered_key: null });
    await db.recordPages([record(url, { fetchedAt: 1_700_000_001_000, render: { rendered: true, reason: 'empty-app-root', domKey: 'sha256:dom' } })]);
    expect(await read()).toEqual({ rendered: true, render_reason: 'empty-app-root', rendered_key: 'sha256:dom' });
    await db.recordPages([record(url, { fetchedAt: 1_700_000_002_000, httpStatus: 304 })]);
    expect(await read()).toEqual({ rendered: true, render_reason: 'empty-app-root', rendered_key: 'sha256:dom' });
    await db.recordPages([record(url, { fetchedAt: 1_700_000_003_000, render: { rendered: false, reason: 'plain-html' } })]);
    expect(await read()).toEqual({ rendered: false, render_reason: 'plain-html', rendered_key: null });
  });

  it('records a page whose URL was never discovered (a hand-made job)', async () => {
    await db.recordPages([record('http://manual.example/x', { state: 'failed', httpStatus: null, errorCode: 'ERR_FETCH_NETWORK' })]);
    const known = await db.existing([fp('http://manual.example/x')]);
    expect(known.size).toBe(1);
  });

  it('handles a large batch in one statement', async () => {
    const urls = Array.from({ length: 5000 }, (_, i) => discovered(`http://big.example/${i}`));
    expect((await db.insertDiscovered(urls)).inserted.length).toBe(5000);
    await db.recordPages(urls.map((u) => record(u.url)));
    expect((await db.counts()).pages).toBeGreaterThanOrEqual(5000);
  });

  it('records the sitemaps robots.txt announces, once each', async () => {
    await db.recordSitemaps('https://a.example', ['https://a.example/sitemap.xml', 'https://a.example/news.xml', 'https://a.example/sitemap.xml']);
    await db.recordSitemaps('https://a.example', ['https://a.example/sitemap.xml']);
    expect(await db.sitemapsOf('https://a.example')).toEqual(['https://a.example/news.xml', 'https://a.example/sitemap.xml']);
  });

  it('probes servers without throwing', async () => {
    expect(await probePostgres(TEST_DATABASE_URL)).toBe(true);
    expect(await probePostgres('postgres://postgres@127.0.0.1:1/none', 300)).toBe(false);
  });
});
