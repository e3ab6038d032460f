import { describe, expect, it } from 'vitest';
import { analyzeLog } from './analyze.js';
import type { RequestLogEntry } from './log.js';

const HOSTS = ['127.1.0.1:9000', '127.1.0.2:9000'];

/** A hand-built log entry: host index, path, start and end in ms from 0. */
function entry(hostIndex: number, path: string, start: number, end: number, status = 200): RequestLogEntry {
  return {
    host: HOSTS[hostIndex] as string,
    hostIndex,
    method: 'GET',
    path,
    pageKey: path.startsWith('/p/') || path === '/' || path === '/robots.txt' ? path.split('?')[0] as string : null,
    start,
    end,
    status,
    bytes: 100,
    userAgent: 'test',
  };
}

const url = (hostIndex: number, path: string): string => `http://${HOSTS[hostIndex]}${path}`;

/** A polite crawl of two hosts: robots first, then pages 100 ms apart, one at a time. */
const cleanLog = (): RequestLogEntry[] => [
  entry(0, '/robots.txt', 0, 5),
  entry(1, '/robots.txt', 1, 6),
  entry(0, '/', 100, 120),
  entry(1, '/', 101, 130),
  entry(0, '/p/1', 200, 240),
  entry(1, '/p/1', 201, 250),
];
const expected = new Set([url(0, '/'), url(0, '/p/1'), url(1, '/'), url(1, '/p/1')]);

describe('analyzeLog', () => {
  it('reports zero violations for a clean, complete crawl', () => {
    const analysis = analyzeLog(cleanLog(), { minIntervalMs: 100, expected });
    expect(analysis).toMatchObject({
      requests: 6,
      robotsRequests: 2,
      hosts: 2,
      inFlight: 0,
      bytes: 600,
      highResolution: false,
      concurrency: { maxPerHost: 1, maxOverall: 2, violationCount: 0, violations: [] },
      intervals: { minIntervalMs: 100, minIdleGapMs: 71, violationCount: 0, violations: [] },
      duplicates: { pageCount: 0, extraFetches: 0, pages: [] },
      coverage: { expected: 4, fetched: 4, missingCount: 0, missing: [], unexpectedCount: 0, unexpected: [] },
      statuses: { 200: 6 },
      firstStart: 0,
      lastEnd: 250,
      durationMs: 250,
      ok: true,
    });
    expect(analysis.perHost.map((h) => [h.host, h.requests, h.robotsRequests, h.maxConcurrency])).toEqual([
      [HOSTS[0], 3, 1, 1],
      [HOSTS[1], 3, 1, 1],
    ]);
  });

  it.each<{ name: string; log: RequestLogEntry[]; check: (a: ReturnType<typeof analyzeLog>) => void }>([
    {
      name: 'overlapping requests to one host',
      log: [entry(0, '/', 0, 150), entry(0, '/p/1', 100, 300), entry(0, '/p/2', 120, 130)],
      check: (a) => {
        expect(a.concurrency.maxPerHost).toBe(3);
        expect(a.concurrency.violationCount).toBe(2);
        expect(a.concurrency.violations).toEqual([
          { host: HOSTS[0], hostIndex: 0, path: '/p/1', start: 100, overlaps: '/', overlapMs: 50 },
          { host: HOSTS[0], hostIndex: 0, path: '/p/2', start: 120, overlaps: '/p/1', overlapMs: 10 },
        ]);
        expect(a.intervals.minIdleGapMs).toBe(-180);
      },
    },
    {
      name: 'back-to-back requests (end = next start) as not overlapping',
      log: [entry(0, '/', 0, 100), entry(0, '/p/1', 100, 200)],
      check: (a) => {
        expect(a.concurrency).toMatchObject({ maxPerHost: 1, violationCount: 0 });
        expect(a.intervals.minIdleGapMs).toBe(0);
      },
    },
    {
      name: 'requests to different hosts as overlapping overall only',
      log: [entry(0, '/', 0, 100), entry(1, '/', 10, 100)],
      check: (a) => expect(a.concurrency).toMatchObject({ maxPerHost: 1, maxOverall: 2, violationCount: 0 }),
    },
    {
      name: 'starts closer than minIntervalMs, robots.txt included',
      log: [entry(0, '/robots.txt', 0, 5), entry(0, '/', 40, 60), entry(0, '/p/1', 200, 210), entry(0, '/p/2', 299, 310)],
      check: (a) => {
        expect(a.intervals.violationCount).toBe(2);
        expect(a.intervals.violations).toEqual([
          { host: HOSTS[0], hostIndex: 0, previousPath: '/robots.txt', path: '/', previousStart: 0, start: 40, intervalMs: 40 },
          { host: HOSTS[0], hostIndex: 0, previousPath: '/p/1', path: '/p/2', previousStart: 200, start: 299, intervalMs: 99 },
        ]);
        expect(a.intervals.minIntervalMs).toBe(40);
      },
    },
    {
      name: 'duplicate successful fetches of one pageKey, whatever the raw path',
      log: [entry(0, '/p/1', 0, 10), entry(0, '/p/1?utm_source=x', 100, 110), entry(0, '/p/1', 200, 210, 500), entry(1, '/p/1', 0, 10)],
      check: (a) => {
        expect(a.duplicates).toEqual({
          pageCount: 1,
          extraFetches: 1,
          pages: [{ host: HOSTS[0], hostIndex: 0, pageKey: '/p/1', count: 2, paths: ['/p/1', '/p/1?utm_source=x'] }],
        });
        expect(a.ok).toBe(false);
      },
    },
    {
      name: 'robots.txt fetched twice as a duplicate unless ignored',
      log: [entry(0, '/robots.txt', 0, 10), entry(0, '/robots.txt', 100, 110)],
      check: (a) => expect(a.duplicates.pageCount).toBe(1),
    },
  ])('detects $name', ({ log, check }) => {
    check(analyzeLog(log, { minIntervalMs: 100 }));
  });

  it('ignores listed paths for duplicates', () => {
    const log = [entry(0, '/robots.txt', 0, 10), entry(0, '/robots.txt', 100, 110)];
    expect(analyzeLog(log, { minIntervalMs: 100, ignorePaths: ['/robots.txt'] }).duplicates.pageCount).toBe(0);
  });

  it('reports missing and unexpected pages against the expected set', () => {
    const log = [
      ...cleanLog().filter((e) => !(e.hostIndex === 1 && e.path === '/p/1')),
      entry(0, '/nofollow/1', 300, 310),
      entry(0, '/p/9', 400, 410, 404),
      entry(1, '/p/1', 300, 310, 503),
    ];
    log[log.length - 3]!.pageKey = '/nofollow/1';
    const a = analyzeLog(log, { minIntervalMs: 100, expected });
    expect(a.coverage).toEqual({
      expected: 4,
      fetched: 3,
      missingCount: 1,
      missing: [url(1, '/p/1')],
      unexpectedCount: 2,
      unexpected: [url(0, '/nofollow/1'), url(0, '/p/9')],
    });
    expect(a.statuses).toEqual({ 200: 6, 404: 1, 503: 1 });
    expect(a.ok).toBe(false);
  });

  it('maps entries to URLs through a custom origin', () => {
    const a = analyzeLog([entry(0, '/', 0, 1)], {
      minIntervalMs: 0,
      expected: new Set(['http://site-0.test/']),
      origin: (e) => `http://site-${e.hostIndex}.test`,
    });
    expect(a.coverage).toMatchObject({ fetched: 1, missingCount: 0, unexpectedCount: 0 });
  });

  it('treats in-flight entries as open and prefers high-resolution times', () => {
    const running = { ...entry(0, '/p/2', 50, -1), status: 0, startHr: 50.25, endHr: -1 };
    const done = { ...entry(0, '/', 0, 10), startHr: 0.5, endHr: 10.5 };
    const a = analyzeLog([done, running, { ...entry(0, '/p/1', 80, 90), startHr: 80.75, endHr: 90.5 }], { minIntervalMs: 0 });
    expect(a.highResolution).toBe(true);
    expect(a.inFlight).toBe(1);
    expect(a.concurrency.violations).toEqual([{ host: HOSTS[0], hostIndex: 0, path: '/p/1', start: 80.75, overlaps: '/p/2', overlapMs: 9.75 }]);
    expect(a.statuses).toEqual({ 200: 2 });
    expect(a.intervals.minIntervalMs).toBe(30.5);
  });

  it('accepts a tolerance and caps listed findings while counting them all', () => {
    const log = Array.from({ length: 50 }, (_, i) => entry(0, `/p/${i}`, i * 95, i * 95 + 10));
    expect(analyzeLog(log, { minIntervalMs: 100, toleranceMs: 5 }).intervals.violationCount).toBe(0);
    const strict = analyzeLog(log, { minIntervalMs: 100, maxListed: 3 });
    expect(strict.intervals.violationCount).toBe(49);
    expect(strict.intervals.violations).toHaveLength(3);
  });

  it('handles an empty log', () => {
    expect(analyzeLog([], { minIntervalMs: 100, expected: new Set() })).toMatchObject({
      requests: 0,
      firstStart: null,
      lastEnd: null,
      durationMs: 0,
      ok: true,
    });
  });

  it('analyzes 100k entries quickly', () => {
    const log: RequestLogEntry[] = [];
    for (let i = 0; i < 100_000; i++) {
      const host = i % 100;
      const t = Math.floor(i / 100) * 100;
      log.push({ ...entry(0, `/p/${Math.floor(i / 100)}`, t, t + 50), host: `127.1.0.${host + 1}:9000`, hostIndex: host });
    }
    const started = performance.now();
    const a = analyzeLog(log, { minIntervalMs: 100 });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(a).toMatchObject({ requests: 100_000, hosts: 100, ok: true, concurrency: { maxPerHost: 1, maxOverall: 100 } });
  });
});
