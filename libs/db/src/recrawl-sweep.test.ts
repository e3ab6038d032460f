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
