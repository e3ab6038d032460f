import { Database } from '@trawl/db';
import { record } from '@trawl/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropNamespace, REDIS_URL, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * `trawl report freshness` as an operator runs it, against a crawl's schema holding pages with
 * known due times and re-crawls: the JSON, the one-host JSON and the text table.
 */
const namespace = uniqueNamespace('report');
const env = { TRAWL_NAMESPACE: namespace, REDIS_URL, DATABASE_URL };
const H = 3_600_000;

beforeAll(async () => {
  const db = new Database({ url: DATABASE_URL, schema: namespace });
  try {
    await db.migrate();
    const now = Date.now();
    // fresh.example: two pages due later, one re-crawled 2 minutes after its due time (in grace).
    // stale.example: one page 3 hours overdue, and one re-crawled an hour late.
    await db.recordPages([
      record('http://fresh.example/a', { fetchedAt: now - 2 * H, nextCrawlAt: now - H, changeFrequencyS: 7200 }),
      record('http://fresh.example/b', { fetchedAt: now - H, nextCrawlAt: now + H, changeFrequencyS: 3600 }),
      record('http://stale.example/a', { fetchedAt: now - 5 * H, nextCrawlAt: now - 3 * H, changeFrequencyS: 86_400 }),
      record('http://stale.example/b', { fetchedAt: now - 6 * H, nextCrawlAt: now - 4 * H, changeFrequencyS: 86_400 }),
    ]);
    // The re-crawls: a new fetch after the due time is logged as a visit by the schema's trigger.
    await db.recordPages([
      record('http://fresh.example/a', { fetchedAt: now - H + 2 * 60_000, nextCrawlAt: now + 2 * H, changeFrequencyS: 7200 }),
      record('http://stale.example/b', { fetchedAt: now - 3 * H, nextCrawlAt: now + 20 * H, changeFrequencyS: 86_400 }),
    ]);
  } finally {
    await db.close();
  }
});
afterAll(() => dropNamespace(namespace));

async function report(args: string[]): Promise<string> {
  const proc = trawl(['report', 'freshness', ...args], env);
  const { code } = await proc.exited;
  if (code !== 0) throw new Error(`trawl report freshness exited ${code}: ${proc.stderr()}`);
  return proc.stdout();
}

describe('trawl report freshness', () => {
  it('reports every host and the total as JSON', async () => {
    const out = JSON.parse(await report(['--json']));
    const byHost = Object.fromEntries(out.hosts.map((h: { host: string }) => [h.host, h]));
    expect(Object.keys(byHost).sort()).toEqual(['fresh.example', 'stale.example']);
    expect(byHost['fresh.example']).toMatchObject({ pages: 2, overdue: 0, recrawls: 1, late: 0, deadlineMissRate: 0 });
    expect(byHost['stale.example']).toMatchObject({ pages: 2, overdue: 1, recrawls: 1, late: 1, deadlineMissRate: 1 });
    expect(byHost['stale.example'].oldestOverdueS).toBeGreaterThanOrEqual(3 * 3600 - 60);
    expect(out.total).toMatchObject({ host: null, pages: 4, overdue: 1, recrawls: 2, late: 1, deadlineMissRate: 0.5 });
  }, 180_000);

  it('reports one host with --host, and a stricter grace changes the verdict', async () => {
    const one = JSON.parse(await report(['--json', '--host', 'fresh.example']));
    expect(one.hosts).toEqual([]);
    expect(one.total).toMatchObject({ host: 'fresh.example', pages: 2, recrawls: 1, late: 0 });
    // Re-crawled 2 minutes after its due time: late once the grace is 60 s.
    const strict = JSON.parse(await report(['--json', '--host', 'fresh.example', '--grace-s', '60']));
    expect(strict.total).toMatchObject({ recrawls: 1, late: 1, deadlineMissRate: 1 });
  }, 180_000);

  it('prints a table with a row per host and one for all hosts', async () => {
    const lines = (await report([])).trim().split('\n');
    expect(lines[0]).toMatch(/^host\s+pages\s+median change\s+overdue\s+oldest overdue\s+re-crawls\s+late\s+miss rate$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['fresh.example', 'stale.example', '(all']);
    expect(lines[2]).toMatch(/100\.0%$/);
    expect(lines[3]).toMatch(/50\.0%$/);
  }, 180_000);
});
