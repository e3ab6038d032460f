import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeLog, type RequestLogEntry, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropNamespace, runCrawlProcesses, uniqueNamespace } from '../src/testing/index.js';

/**
 * Host rank, end to end: many more hosts due than fetch slots (two), half of them seeded at
 * priority 1, half at 0.1 — the low ones listed first, so due order alone would favour them.
 * Every page of every host is seeded, so every host has work queued from the start (a host can
 * only be chosen while it has URLs queued): when a host's next page comes due does not depend on
 * how soon the process stage reads a page that links to it, which a loaded machine stretches.
 * Judged from the synthetic web's request log: when each group's pages were served, that every
 * page was fetched once, and that no host saw two requests at once or closer than the delay.
 */
const HOSTS = 16;
const PAGES = 6;
const DELAY = 100;
const HIGH = new Set(Array.from({ length: HOSTS / 2 }, (_, i) => i + HOSTS / 2));

let web: TestWeb;
let dir: string;
const namespaces: string[] = [];

beforeAll(async () => {
  // Each request holds a fetch slot for its response time: at 20–30 ms, 16 hosts due every 100 ms
  // ask for ~4 slots' worth of fetching against the 2 there are, so the rank (not a free slot)
  // decides who goes next. At 5–15 ms they asked for about the 2 there are, and on a fast hour
  // both groups went at their hosts' delay, whatever the rank.
  web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: PAGES - 1, crossHostLinks: 0, latencyMs: { min: 20, max: 30 }, seed: 80, noisyLinks: false });
  dir = mkdtempSync(join(tmpdir(), 'trawl-priority-'));
}, 60_000);

afterAll(async () => {
  await web?.stop();
  rmSync(dir, { recursive: true, force: true });
  for (const namespace of namespaces) await dropNamespace(namespace);
});

/**
 * Seconds from the first fetch of a page below the root (each host's root, its first page, is
 * left out: every host starts with it) to each group's pages' completion: median, 90th
 * percentile and last.
 */
function completion(log: readonly RequestLogEntry[]): Record<'high' | 'low', { median: number; p90: number; last: number }> {
  const linked = log.filter((entry) => entry.resource === 'page' && entry.pageKey !== '/');
  const first = Math.min(...linked.map((entry) => entry.start));
  const group = (high: boolean) => {
    const ends = linked
      .filter((entry) => HIGH.has(entry.hostIndex) === high)
      .map((entry) => (entry.end - first) / 1000)
      .sort((a, b) => a - b);
    const at = (q: number) => ends[Math.min(ends.length - 1, Math.floor(q * ends.length))] as number;
    return { median: at(0.5), p90: at(0.9), last: ends[ends.length - 1] as number };
  };
  return { high: group(true), low: group(false) };
}

async function crawl(label: string, extra: Record<string, string>): Promise<ReturnType<typeof completion>> {
  web.clearLog();
  const namespace = uniqueNamespace(label);
  namespaces.push(namespace);
  const roots = web.rootUrls();
  const seedsFile = join(dir, `${label}.seeds`);
  const pages = (high: boolean, priority: string) =>
    Array.from({ length: HOSTS }, (_, host) => host)
      .filter((host) => HIGH.has(host) === high)
      .flatMap((host) => Array.from({ length: PAGES }, (_, page) => `${web.pageUrl(host, page)} ${priority}`));
  // Low group first: they are pushed, so due, a little earlier than the high group.
  writeFileSync(seedsFile, [...pages(false, '0.1'), ...pages(true, '1')].join('\n'));
  const { summary } = await runCrawlProcesses(['--seeds-file', seedsFile], {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    TRAWL_LOG_LEVEL: 'warn',
    TRAWL_MIN_DELAY_MS: String(DELAY),
    TRAWL_ADAPTIVE_DELAY_FACTOR: '0',
    TRAWL_CONCURRENCY: '2',
    // The fetch queue holds no more than the fetch slots: the dispatcher's rank decides who is next.
    TRAWL_DISPATCH_WINDOW: '2',
    // Each claim (of at most 2) ranks all 16 hosts.
    TRAWL_HOST_RANK_WINDOW: '8',
    TRAWL_RECRAWL: '0',
    ...extra,
  });
  expect(summary.finished).toBe('complete');
  await web.idle();
  const expected = web.groundTruth(roots, 'host');
  const report = analyzeLog(web.log, { minIntervalMs: DELAY, expected });
  // Every host completes: nothing starves, nothing is fetched twice, politeness holds.
  expect(report.coverage?.missing).toEqual([]);
  expect(report.coverage?.fetched).toBe(HOSTS * PAGES);
  expect(report.duplicates.pages).toEqual([]);
  expect(report.concurrency.maxPerHost).toBe(1);
  expect(report.intervals.violations).toEqual([]);
  const times = completion(web.log);
  const show = (g: { median: number; p90: number; last: number }) => `median ${g.median.toFixed(2)} s, p90 ${g.p90.toFixed(2)} s, last ${g.last.toFixed(2)} s`;
  console.log(`${label}: ${HOSTS} hosts × ${PAGES} pages, 2 fetch slots, delay ${DELAY} ms — completion of the pages below the roots after the first of them started: seed priority 1 (${HIGH.size} hosts): ${show(times.high)}; seed priority 0.1 (${HOSTS - HIGH.size} hosts): ${show(times.low)}`);
  return times;
}

describe('host rank end to end', () => {
  it('serves the high-score hosts\' pages first when more hosts are due than fetch slots, and still completes every host', async () => {
    const ranked = await crawl('rank', {});
    expect(ranked.high.median).toBeLessThan(ranked.low.median);
    // Most of the high group is done before half of the low group.
    expect(ranked.high.p90).toBeLessThan(ranked.low.median);

    // The same crawl by due time alone: the groups interleave (the low one, seeded first, ahead).
    const byDue = await crawl('due', { TRAWL_HOST_RANK_LEAD_MS: '0' });
    expect(byDue.high.p90).toBeGreaterThan(byDue.low.median);
  }, 240_000);
});
