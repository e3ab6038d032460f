import { describe, expect, it } from 'vitest';
import type { HostileViolation } from './analyze-hostile.js';
import { analyzeHostile } from './analyze-hostile.js';
import type { HostileExpectation, HostileKind } from './hostile/types.js';
import type { RequestLogEntry } from './log.js';

const NORMAL = '127.1.0.1:9000';
const HOSTILE = '127.1.0.3:9000';
const PRIVATE = '127.0.0.99:9001';
const O = `http://${HOSTILE}`;
const N = `http://${NORMAL}`;

/** A hand-built entry: host, path, start and end in ms, status, and extra fields. */
function entry(host: string, path: string, start: number, end: number, status = 200, extra: Partial<RequestLogEntry> = {}): RequestLogEntry {
  return { host, hostIndex: host === NORMAL ? 0 : host === HOSTILE ? 2 : -1, method: 'GET', path, pageKey: path, start, end, status, bytes: 100, userAgent: 'test', ...extra };
}
const h = (path: string, start: number, end: number, status = 200, extra: Partial<RequestLogEntry> = {}): RequestLogEntry => entry(HOSTILE, path, start, end, status, extra);
const robots = (start = 0): RequestLogEntry => h('/robots.txt', start, start + 5);

function expectation(kind: HostileKind, fields: Partial<HostileExpectation> = {}): HostileExpectation {
  return { kind, hostIndex: 2, origin: O, mustFetch: [], mustRequest: [], mustNotFetch: [], mustNotFetchPrefixes: [], robotsDisallow: [], limits: [], notFoundPrefixes: [], notes: '', ...fields };
}

type Found = Pick<HostileViolation, 'check' | 'kind' | 'url'>;
interface Case {
  name: string;
  expectations: HostileExpectation[];
  good: RequestLogEntry[];
  bad: RequestLogEntry[];
  found: Found[];
  privateLog?: RequestLogEntry[];
  options?: Parameters<typeof analyzeHostile>[2];
}

const cases: Case[] = [
  {
    name: 'a mustFetch page never answered 2xx',
    expectations: [expectation('throttle-429', { mustFetch: [`${O}/a/1`] })],
    good: [robots(), h('/a/1', 100, 110, 429), h('/a/1', 3000, 3010)],
    bad: [robots(), h('/a/1', 100, 110, 429)],
    found: [{ check: 'must-fetch', kind: 'throttle-429', url: `${O}/a/1` }],
  },
  {
    name: 'a mustRequest URL never requested',
    expectations: [expectation('tarpit', { mustRequest: [`${O}/tarpit`] })],
    good: [robots(), h('/tarpit', 100, 2000, 200, { aborted: true })],
    bad: [robots(), h('/', 100, 110)],
    found: [{ check: 'must-request', kind: 'tarpit', url: `${O}/tarpit` }],
  },
  {
    name: 'a mustNotFetch URL or prefix requested (in a non-canonical form too)',
    expectations: [expectation('redirects', { mustNotFetch: [`${O}/r/long/6`], mustNotFetchPrefixes: [`${O}/private/`] })],
    good: [robots(), h('/r/long/5', 100, 110, 308), h('/privatepage', 200, 210, 404)],
    bad: [robots(), h('/r/long/%36', 100, 110, 302), h('/x/../private/1', 200, 210)],
    found: [
      { check: 'must-not-fetch', kind: 'redirects', url: `${O}/r/long/6` },
      { check: 'must-not-fetch', kind: 'redirects', url: `${O}/private/1` },
    ],
  },
  {
    name: 'a path robots.txt disallows, reported once as robots (not also must-not-fetch)',
    expectations: [expectation('robots-500', { robotsDisallow: ['/'], mustNotFetch: [`${O}/`] })],
    good: [h('/robots.txt', 0, 5, 500), h('/robots.txt', 1000, 1005, 500)],
    bad: [h('/robots.txt', 0, 5, 500), h('/', 100, 110)],
    found: [{ check: 'robots', kind: 'robots-500', url: `${O}/` }],
  },
  {
    name: 'a request before robots.txt was answered, on any host',
    expectations: [],
    good: [entry(NORMAL, '/robots.txt', 0, 5), entry(NORMAL, '/', 5, 10)],
    bad: [entry(NORMAL, '/', 0, 5), entry(NORMAL, '/robots.txt', 10, 15)],
    found: [{ check: 'robots-first', kind: 'normal', url: `${N}/` }],
  },
  {
    name: 'a request earlier than the Retry-After the server sent (its notBefore)',
    expectations: [expectation('throttle-429')],
    good: [robots(), h('/a/1', 100, 110, 429, { notBefore: 2100 }), h('/a/1', 2100, 2110)],
    bad: [robots(), h('/a/1', 100, 110, 429, { notBefore: 2100 }), h('/a/2', 1500, 1510)],
    found: [{ check: 'retry-after', kind: 'throttle-429', url: `${O}/a/2` }],
  },
  {
    name: 'a request sooner after a bare 429 than minGapAfterStatusMs',
    expectations: [expectation('throttle-429-bare', { minGapAfterStatusMs: { 429: 1500 } })],
    good: [robots(), h('/a/1', 100, 110, 429), h('/a/1', 1610, 1620)],
    bad: [robots(), h('/a/1', 100, 110, 429), h('/a/1', 1000, 1010)],
    found: [{ check: 'retry-after', kind: 'throttle-429-bare', url: `${O}/a/1` }],
  },
  {
    name: 'requests closer than Crawl-delay (robots.txt aside)',
    expectations: [expectation('robots-crawl-delay', { minIntervalMs: 2000 })],
    good: [robots(), h('/', 10, 20), h('/a/1', 2010, 2020), h('/robots.txt', 2500, 2505), h('/a/2', 4010, 4020)],
    bad: [robots(), h('/', 10, 20), h('/a/1', 1500, 1510)],
    found: [{ check: 'min-interval', kind: 'robots-crawl-delay', url: `${O}/a/1` }],
  },
  {
    name: 'more requests to the calendar host than maxRequests',
    expectations: [expectation('calendar-trap', { maxRequests: 3 })],
    good: [robots(), h('/', 100, 110), h('/calendar?date=2026-01-01', 200, 210)],
    bad: [robots(), h('/', 100, 110), h('/calendar?date=2026-01-01', 200, 210), h('/calendar?date=2026-01-02', 300, 310)],
    found: [{ check: 'max-requests', kind: 'calendar-trap', url: null }],
  },
  {
    name: 'more requests under a prefix than its limit',
    expectations: [expectation('redirects', { limits: [{ url: `${O}/r/loop`, match: 'prefix', maxRequests: 2 }] })],
    good: [robots(), h('/r/loop', 100, 110, 302), h('/r/loop/b', 200, 210, 302)],
    bad: [robots(), h('/r/loop', 100, 110, 302), h('/r/loop/b', 200, 210, 302), h('/r/loop', 300, 310, 302)],
    found: [{ check: 'request-limit', kind: 'redirects', url: `${O}/r/loop` }],
  },
  {
    name: 'a response that wrote more bytes than its bound',
    expectations: [expectation('gzip-bomb', { limits: [{ url: `${O}/bomb`, match: 'exact', maxBytesPerResponse: 1000 }] })],
    good: [robots(), h('/bomb', 100, 110, 200, { bytes: 1000, aborted: true }), h('/', 200, 210, 200, { bytes: 5000 })],
    bad: [robots(), h('/bomb', 100, 110, 200, { bytes: 1001 })],
    found: [{ check: 'bytes', kind: 'gzip-bomb', url: `${O}/bomb` }],
  },
  {
    name: 'a response open longer than its bound (high-resolution times preferred)',
    expectations: [expectation('tarpit', { limits: [{ url: `${O}/tarpit`, match: 'exact', maxResponseMs: 1000 }] })],
    good: [robots(), h('/tarpit', 100, 1200, 200, { startHr: 100.5, endHr: 1105 })],
    bad: [robots(), h('/tarpit', 100, 1200, 200, { aborted: true })],
    found: [{ check: 'duration', kind: 'tarpit', url: `${O}/tarpit` }],
  },
  {
    name: 'a 404 where every link exists',
    expectations: [expectation('encodings', { notFoundPrefixes: [`${O}/enc/`] })],
    good: [robots(), h('/enc/latin1/caf%C3%A9', 100, 110), h('/favicon.ico', 200, 210, 404)],
    bad: [robots(), h('/enc/latin1/caf%EF%BF%BD', 100, 110, 404)],
    found: [{ check: 'not-found', kind: 'encodings', url: `${O}/enc/latin1/caf%EF%BF%BD` }],
  },
  {
    name: 'a request that reached the private server',
    expectations: [expectation('redirects')],
    good: [robots(), h('/r/private', 100, 110, 302)],
    bad: [robots(), h('/r/private', 100, 110, 302)],
    privateLog: [entry(PRIVATE, '/secret', 120, 125)],
    found: [{ check: 'private', kind: 'private', url: `http://${PRIVATE}/secret` }],
  },
  {
    name: 'two requests in flight to one host',
    expectations: [expectation('tarpit')],
    good: [robots(), h('/tarpit', 100, 900, 200, { aborted: true }), h('/', 900, 910)],
    bad: [robots(), h('/tarpit', 100, 900, 200, { aborted: true }), h('/', 500, 510)],
    found: [{ check: 'concurrency', kind: 'tarpit', url: `${O}/` }],
  },
  {
    name: 'starts closer than the politeness floor given in the options',
    expectations: [],
    good: [entry(NORMAL, '/robots.txt', 0, 5), entry(NORMAL, '/', 100, 110)],
    bad: [entry(NORMAL, '/robots.txt', 0, 5), entry(NORMAL, '/', 50, 60)],
    found: [{ check: 'interval', kind: 'normal', url: `${N}/` }],
    options: { minIntervalMs: 100 },
  },
  {
    name: 'a page fetched successfully twice (an abandoned response and its retry are not)',
    expectations: [expectation('meta-robots')],
    good: [robots(), h('/meta/noindex', 100, 110, 200, { aborted: true }), h('/meta/noindex', 200, 210), h('/meta/noindex', 300, 310, 503)],
    bad: [robots(), h('/meta/noindex', 100, 110), h('/meta/noindex', 200, 210)],
    found: [{ check: 'duplicate', kind: 'meta-robots', url: `${O}/meta/noindex` }],
  },
  {
    name: 'expected normal pages missing, and unexpected ones fetched',
    expectations: [],
    good: [entry(NORMAL, '/robots.txt', 0, 5), entry(NORMAL, '/', 100, 110), entry(NORMAL, '/p/1', 200, 210)],
    bad: [entry(NORMAL, '/robots.txt', 0, 5), entry(NORMAL, '/', 100, 110), entry(NORMAL, '/nofollow/1', 200, 210)],
    found: [
      { check: 'must-fetch', kind: 'normal', url: `${N}/p/1` },
      { check: 'unexpected', kind: 'normal', url: `${N}/nofollow/1` },
    ],
    options: { expected: new Set([`${N}/`, `${N}/p/1`]) },
  },
  {
    name: 'a response still open',
    expectations: [expectation('robots-timeout')],
    good: [h('/robots.txt', 0, 1000, 0, { aborted: true })],
    bad: [h('/robots.txt', 0, -1, 0)],
    found: [{ check: 'open', kind: 'robots-timeout', url: `${O}/robots.txt` }],
  },
];

describe('analyzeHostile', () => {
  it.each(cases)('reports nothing for a good log and exactly the finding for a bad one: $name', (c) => {
    const options = { privateLog: [], ...c.options };
    const good = analyzeHostile(c.good, c.expectations, options);
    expect(good.violations).toEqual([]);
    expect(good).toMatchObject({ ok: true, violationCount: 0, counts: {}, byKind: {} });
    const bad = analyzeHostile(c.bad, c.expectations, { ...options, privateLog: c.privateLog ?? [] });
    expect(bad.violations.map(({ check, kind, url }) => ({ check, kind, url }))).toEqual(c.found);
    expect(bad.ok).toBe(false);
    for (const v of bad.violations) {
      expect(v.detail.length).toBeGreaterThan(5);
      expect(bad.byKind[v.kind]).toContain(v);
    }
  });

  it('orders violations by host kind (expectations first, then normal, then private) and time, counts them all, and caps the list', () => {
    const expectations = [expectation('robots-disallow', { robotsDisallow: ['/private/'] })];
    const log = [
      entry(NORMAL, '/', 5, 6),
      h('/private/2', 300, 310),
      h('/private/1', 200, 210),
      robots(),
      entry(NORMAL, '/robots.txt', 10, 11),
    ];
    const report = analyzeHostile(log, expectations, { privateLog: [entry(PRIVATE, '/secret', 1, 2)] });
    expect(report.violations.map((v) => [v.kind, v.check, v.url])).toEqual([
      ['robots-disallow', 'robots', `${O}/private/1`],
      ['robots-disallow', 'robots', `${O}/private/2`],
      ['normal', 'robots-first', `${N}/`],
      ['private', 'private', `http://${PRIVATE}/secret`],
    ]);
    expect(report.counts).toEqual({ robots: 2, 'robots-first': 1, private: 1 });
    expect(Object.keys(report.byKind)).toEqual(['robots-disallow', 'normal', 'private']);
    const capped = analyzeHostile(log, expectations, { maxListed: 2 });
    expect(capped.violations).toHaveLength(2);
    expect(capped.violationCount).toBe(3);
    expect(report.analysis.requests).toBe(5);
  });

  it('lets robots-first and duplicate checks be turned off, and applies the tolerance to timing checks', () => {
    const log = [entry(NORMAL, '/', 0, 5), entry(NORMAL, '/', 10, 15)];
    expect(analyzeHostile(log, [], { robotsFirst: false, duplicates: false }).violations).toEqual([]);
    const retry = [robots(), h('/a/1', 100, 110, 429, { notBefore: 2100 }), h('/a/1', 2095, 2110)];
    expect(analyzeHostile(retry, [expectation('throttle-429')]).violations).toEqual([]);
    expect(analyzeHostile(retry, [expectation('throttle-429')], { toleranceMs: 0 }).counts).toEqual({ 'retry-after': 1 });
  });

  it('handles an empty log: only mustFetch and mustRequest can be missing', () => {
    const report = analyzeHostile([], [expectation('always-500', { mustFetch: [`${O}/`], mustRequest: [`${O}/broken`] })]);
    expect(report.violations.map((v) => v.check)).toEqual(['must-fetch', 'must-request']);
  });
});
