import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Database, PageRecord } from './database.js';
import { Freshness, type FreshnessRow, type RecrawlUpdate } from './freshness.js';
import { testDatabase } from './testing/index.js';

const fp = (url: string) => createHash('sha256').update(url).digest().subarray(0, 16);
const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;

/** A fetch record as the crawl writes it: a 200 with a body. */
function fetched(url: string, fetchedAt: number, nextCrawlAt: number | null): PageRecord {
  const nothing = { contentType: null, storageKey: null, contentLength: null, fetchMs: null, redirectTo: null, canonicalUrl: null, linksFound: null };
  const noError = { errorCode: null, errorMessage: null, etag: null, lastModified: null, charset: null };
  return {
    ...nothing,
    ...noError,
    hash: fp(url), url, host: new URL(url).host, depth: 0, state: 'done', httpStatus: 200, contentHash: 'h', fetchedAt, truncated: false,
    changeFrequencyS: null, lastChangedAt: null, nextCrawlAt, noindex: false, nofollow: false, bodySkipped: false,
  };
}

let db: Database;
let schema: string;
let cleanup: () => Promise<void>;
let freshness: Freshness;
beforeAll(async () => {
  ({ db, schema, cleanup } = await testDatabase('freshness'));
  freshness = new Freshness(db.pool, schema);
});
afterAll(() => cleanup());
beforeEach(async () => {
  await db.pool.query(`TRUNCATE "${schema}".crawled_pages, "${schema}".urls, "${schema}".recrawl_visits`);
});

const visits = async () =>
  (await db.pool.query<{ url_hash: Buffer; host: string; due_at: Date; fetched_at: Date }>(`SELECT * FROM "${schema}".recrawl_visits ORDER BY fetched_at, host`)).rows.map((r) => ({
    hash: r.url_hash.toString('hex'),
    host: r.host,
    dueAt: r.due_at.getTime(),
    fetchedAt: r.fetched_at.getTime(),
  }));

describe('re-crawl log (trigger on crawled_pages)', () => {
  const T = Date.UTC(2030, 0, 1);

  it('logs each re-crawl of a scheduled page with the due time it answered', async () => {
    const url = 'http://log.example/a';
    await db.recordPages([fetched(url, T, T + H)]);
    expect(await visits()).toEqual([]); // a first fetch is not a re-crawl
    await db.recordPages([fetched(url, T + 2 * H, T + 5 * H)]);
    await db.recordPages([fetched(url, T + 5 * H + MIN, T + 9 * H)]);
    expect(await visits()).toEqual([
      { hash: fp(url).toString('hex'), host: 'log.example', dueAt: T + H, fetchedAt: T + 2 * H },
      { hash: fp(url).toString('hex'), host: 'log.example', dueAt: T + 5 * H, fetchedAt: T + 5 * H + MIN },
    ]);
  });

  it('skips pages that had no due time and writes that do not move fetched_at; logs a whole batch', async () => {
    await db.recordPages([fetched('http://log.example/unscheduled', T, null), fetched('http://log.example/same', T, T + H)]);
    await db.recordPages([fetched('http://log.example/unscheduled', T + H, T + 2 * H), fetched('http://log.example/same', T, T + 3 * H)]);
    expect(await visits()).toEqual([]);
    const batch = ['b1', 'b2', 'b3'].map((p) => `http://batch${p}.example/`);
    await db.recordPages(batch.map((u) => fetched(u, T, T + H)));
    await db.recordPages(batch.map((u) => fetched(u, T + 30 * MIN, T + 2 * H)));
    expect((await visits()).map((v) => [v.host, v.dueAt - T, v.fetchedAt - T])).toEqual([
      ['batchb1.example', H, 30 * MIN],
      ['batchb2.example', H, 30 * MIN],
      ['batchb3.example', H, 30 * MIN],
    ]);
  });

  it('prunes old entries', async () => {
    const now = Date.now();
    for (const [i, age] of [2 * D, 3 * D, H].entries()) {
      await db.pool.query(`INSERT INTO "${schema}".recrawl_visits VALUES ($1, 'p.example', $2, $2)`, [fp(`p${i}`), new Date(now - age)]);
    }
    expect(await freshness.pruneVisits(D)).toBe(2);
    expect((await visits()).map((v) => v.fetchedAt)).toEqual([now - H]);
  });
});

describe('page re-crawl state', () => {
  it('starts empty, and stores and reads back every field', async () => {
    const T = Date.UTC(2030, 0, 1);
    const url = 'http://state.example/';
    await db.recordPages([fetched(url, T, T + H)]);
    expect((await freshness.pageStates([fp(url), fp('http://absent.example/')])).get(fp(url).toString('latin1'))).toEqual({
      contentHash: 'h', visits: 0, changes: 0, changedS: 0, unchangedS: 0, checkedAt: null, lastChangedAt: null, intervalS: null, failures: 0,
      nextCrawlAt: T + H, fetchedAt: T,
    });
    const update: RecrawlUpdate = {
      hash: fp(url), visits: 3.85, changes: 1.9025, changedS: 7_125.5, unchangedS: 1e-3, checkedAt: T, lastChangedAt: T - H,
      intervalS: 1_234.5, failures: 2, changeFrequencyS: 2_468.6, nextCrawlAt: T + 2 * H,
    };
    await freshness.savePageStates([{ ...update, failures: 9 }, update, { ...update, hash: fp('http://absent.example/') }]);
    const { hash: _hash, changeFrequencyS: _freq, ...state } = update;
    expect((await freshness.pageStates([fp(url)])).get(fp(url).toString('latin1'))).toEqual({ ...state, contentHash: 'h', fetchedAt: T });
    const { rows } = await db.pool.query(`SELECT change_frequency_s, next_crawl_at FROM "${schema}".crawled_pages`);
    expect(rows).toEqual([{ change_frequency_s: 2_469, next_crawl_at: new Date(T + 2 * H) }]);
    expect(await visits()).toEqual([]); // storing the state is not a visit
  });
});

describe('freshness report', () => {
  // Report time T; hosts a (4 pages, 5 logged re-crawls of which 3 in the last day), b (2 pages,
  // none), c (no pages, 1 re-crawl).
  const T = Math.floor(Date.now() / 1000) * 1000;
  const page = (host: string, n: number, freq: number | null, next: number | null) =>
    db.pool.query(
      `INSERT INTO "${schema}".crawled_pages (url_hash, host, url, fetched_at, last_crawled_at, change_frequency_s, next_crawl_at)
       VALUES ($1, $2, $3, $4, $4, $5, $6)`,
      [fp(`${host}/${n}`), host, `http://${host}/${n}`, new Date(T - D), freq, next === null ? null : new Date(next)],
    );
  const visit = (host: string, due: number, at: number) =>
    db.pool.query(`INSERT INTO "${schema}".recrawl_visits VALUES ($1, $2, $3, $4)`, [fp(`${host}/${at}`), host, new Date(due), new Date(at)]);

  beforeEach(async () => {
    await page('a.example', 1, 100, T - H); // overdue 1 h
    await page('a.example', 2, 300, T - MIN); // overdue 1 min
    await page('a.example', 3, null, T + 1000 * S);
    await page('a.example', 4, 1000, null);
    await page('b.example', 1, 50, T + 10 * S);
    await page('b.example', 2, 150, null);
    await visit('a.example', T - 2 * H, T - 2 * H + MIN); // on time
    await visit('a.example', T - 3 * H, T - 3 * H + 10 * MIN); // late
    await visit('a.example', T - H, T - H + 5 * MIN); // exactly at the grace: on time
    await visit('a.example', T - 2 * D - H, T - 2 * D); // late, but two days ago
    await visit('a.example', T - MIN, T + MIN); // after the report time
    await visit('c.example', T - H, T - 10 * MIN); // late
  });

  const row = (host: string | null, values: Omit<FreshnessRow, 'host'>): FreshnessRow => ({ host, ...values });
  const A = row('a.example', { pages: 4, scheduled: 3, changing: 3, medianChangeIntervalS: 300, overdue: 2, oldestOverdueS: 3600, recrawls: 3, late: 1, deadlineMissRate: 1 / 3 });
  const B = row('b.example', { pages: 2, scheduled: 1, changing: 2, medianChangeIntervalS: 100, overdue: 0, oldestOverdueS: null, recrawls: 0, late: 0, deadlineMissRate: null });
  const C = row('c.example', { pages: 0, scheduled: 0, changing: 0, medianChangeIntervalS: null, overdue: 0, oldestOverdueS: null, recrawls: 1, late: 1, deadlineMissRate: 1 });
  const ALL = row(null, { pages: 6, scheduled: 4, changing: 5, medianChangeIntervalS: 150, overdue: 2, oldestOverdueS: 3600, recrawls: 4, late: 2, deadlineMissRate: 0.5 });

  it('reports every column per host and for all hosts', async () => {
    expect(await freshness.report({ at: T })).toEqual({ total: ALL, hosts: [A, B, C] });
  });

  it('takes the grace period and the window as parameters', async () => {
    const strict = await freshness.report({ at: T, graceMs: 0 });
    expect(strict.hosts[0]).toEqual({ ...A, late: 3, deadlineMissRate: 1 });
    const lenient = await freshness.report({ at: T, graceMs: 15 * MIN });
    expect(lenient.hosts.map((h) => [h.host, h.late])).toEqual([['a.example', 0], ['b.example', 0], ['c.example', 1]]);
    const threeDays = await freshness.report({ at: T, recentMs: 3 * D });
    expect(threeDays.hosts[0]).toEqual({ ...A, recrawls: 4, late: 2, deadlineMissRate: 0.5 });
  });

  it('reports one host', async () => {
    expect(await freshness.host('a.example', { at: T })).toEqual(A);
    expect(await freshness.host('c.example', { at: T })).toEqual(C);
    expect(await freshness.host('nowhere.example', { at: T })).toEqual(
      row('nowhere.example', { pages: 0, scheduled: 0, changing: 0, medianChangeIntervalS: null, overdue: 0, oldestOverdueS: null, recrawls: 0, late: 0, deadlineMissRate: null }),
    );
  });

  it('reports an empty crawl', async () => {
    await db.pool.query(`TRUNCATE "${schema}".crawled_pages, "${schema}".recrawl_visits`);
    expect(await freshness.report({ at: T })).toEqual({ total: { ...B, host: null, pages: 0, scheduled: 0, changing: 0, medianChangeIntervalS: null }, hosts: [] });
  });

  it('has views with the defaults for psql: per host, total, overdue pages', async () => {
    // The views use now(), a moment after T: only the overdue ages move.
    const close = (r: FreshnessRow) => ({ ...r, oldestOverdueS: r.oldestOverdueS === null ? null : Math.round(r.oldestOverdueS / 60) });
    const camel = (r: Record<string, unknown>): FreshnessRow => ({
      host: (r.host as string | undefined) ?? null, pages: Number(r.pages), scheduled: Number(r.scheduled), changing: Number(r.changing),
      medianChangeIntervalS: r.median_change_interval_s as number | null, overdue: Number(r.overdue), oldestOverdueS: r.oldest_overdue_s as number | null,
      recrawls: Number(r.recrawls), late: Number(r.late), deadlineMissRate: r.deadline_miss_rate as number | null,
    });
    const byHost = (await db.pool.query(`SELECT * FROM "${schema}".freshness_by_host`)).rows.map(camel);
    expect(byHost.map(close)).toEqual([A, B, C].map(close));
    const total = (await db.pool.query(`SELECT * FROM "${schema}".freshness_total`)).rows.map(camel);
    expect(total.map(close)).toEqual([close(ALL)]);
    const { rows } = await db.pool.query<{ url: string; overdue_s: number }>(`SELECT url, overdue_s FROM "${schema}".recrawl_overdue ORDER BY overdue_s DESC`);
    expect(rows.map((r) => [r.url, Math.round(r.overdue_s / 60)])).toEqual([['http://a.example/1', 60], ['http://a.example/2', 1]]);
  });
});
