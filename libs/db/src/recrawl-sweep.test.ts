import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database.js';
import { takeDuePages } from './recrawl-sweep.js';
import { discovered, record, testDatabase } from './testing/index.js';

let db: Database;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ db, cleanup } = await testDatabase('sweep'));
});
afterAll(() => cleanup());

const DAY_MS = 86_400_000;
const MAX_S = 30 * 86_400;

describe('takeDuePages honours the maximum interval (isDue)', () => {
  it('takes pages past their due time and pages unvisited for maxIntervalS, whatever their due time says', async () => {
    const now = Date.now();
    const pages = {
      // Due by its schedule.
      due: record('https://cap.example/due', { fetchedAt: now - DAY_MS, nextCrawlAt: now - 1000 }),
      // Recorded while re-crawl was off: no due time, fetched 31 days ago.
      unscheduledOld: record('https://cap.example/unscheduled-old', { fetchedAt: now - 31 * DAY_MS, nextCrawlAt: null }),
      // Scheduled by a policy with a longer maximum: due in 60 days, fetched 40 days ago.
      beyondCap: record('https://cap.example/beyond-cap', { fetchedAt: now - 40 * DAY_MS, nextCrawlAt: now + 60 * DAY_MS }),
      // Neither: no due time but fetched yesterday; due next week.
      unscheduledRecent: record('https://cap.example/unscheduled-recent', { fetchedAt: now - DAY_MS, nextCrawlAt: null }),
      notYet: record('https://cap.example/not-yet', { fetchedAt: now - DAY_MS, nextCrawlAt: now + 7 * DAY_MS }),
    };
    const all = Object.values(pages);
    await db.insertDiscovered(all.map((p) => discovered(p.url)));
    await db.recordPages(all);

    const taken = await takeDuePages(db.pool, db.options.schema, { limit: 100, perHost: 100, maxIntervalS: MAX_S });
    expect(taken.map((p) => p.url).sort()).toEqual([pages.beyondCap.url, pages.due.url, pages.unscheduledOld.url].sort());
    // Taken pages are marked: a second sweep does not take them again.
    expect(await takeDuePages(db.pool, db.options.schema, { limit: 100, perHost: 100, maxIntervalS: MAX_S })).toEqual([]);
    // A shorter maximum makes yesterday's unscheduled page due as well.
    const shorter = await takeDuePages(db.pool, db.options.schema, { limit: 100, perHost: 100, maxIntervalS: 3600 });
    expect(shorter.map((p) => p.url).sort()).toEqual([pages.notYet.url, pages.unscheduledRecent.url].sort());
  });
});

describe('takeDuePages: the per-host refresh subset', () => {
  it('with more pages due than slots, takes the homepage and section pages first, yet never starves a long-overdue deep page', async () => {
    const now = Date.now();
    const HOUR = 3_600_000;
    const page = (path: string, depth: number, dueAgoMs: number) =>
      record(`https://big.example${path}`, { depth, fetchedAt: now - 2 * DAY_MS, nextCrawlAt: now - dueAgoMs });
    const pages = {
      home: page('/', 0, 60_000),
      section: page('/news/', 1, 10 * 60_000),
      deep: page('/news/2026/12/01/story', 4, 3 * HOUR),
      deeper: page('/archive/2019/05/story', 5, 2 * HOUR),
      // Overdue for longer than any lead: it goes first whatever its depth.
      forgotten: page('/archive/2001/story', 6, 2 * DAY_MS),
    };
    const all = Object.values(pages);
    await db.insertDiscovered(all.map((p) => discovered(p.url, p.depth)));
    await db.recordPages(all);

    const first = await takeDuePages(db.pool, db.options.schema, { limit: 100, perHost: 3, maxIntervalS: MAX_S });
    expect(first.map((p) => p.url).sort()).toEqual([pages.forgotten.url, pages.home.url, pages.section.url].sort());
    // The taken pages still hold the host's slots; released (fetched again), the deep ones follow in due order.
    await db.recordPages(first.map((p) => record(p.url, { depth: p.depth, fetchedAt: now, nextCrawlAt: now + DAY_MS })));
    const next = await takeDuePages(db.pool, db.options.schema, { limit: 100, perHost: 1, maxIntervalS: MAX_S });
    expect(next.map((p) => p.url)).toEqual([pages.deep.url]);
  });
});
