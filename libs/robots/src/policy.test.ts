import { describe, expect, it } from 'vitest';
import {
  decide,
  entryFromFetch,
  needsFetch,
  ROBOTS_MAX_TTL_MS,
  type RobotsEntry,
  type RobotsFetchOutcome,
  type RobotsOptions,
} from './policy.js';
import { ROBOTS_MAX_BYTES } from './text.js';

const NOW = 1_700_000_000_000;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const options: RobotsOptions = {
  productToken: 'trawl',
  ttlMs: DAY,
  retryBaseMs: MINUTE,
  outageFallbackMs: 30 * DAY,
  maxCrawlDelayMs: 30 * SECOND,
  overCap: 'clamp',
};

const skipOptions: RobotsOptions = { ...options, overCap: 'skip' };

const URL_OK = 'https://example.com/public/page';
const URL_NO = 'https://example.com/private/page';
const BODY = 'User-agent: trawl\nDisallow: /private\nCrawl-delay: 2\n';

const response = (status: number, body = ''): RobotsFetchOutcome => ({
  kind: 'response',
  status,
  body: Buffer.from(body),
  finalUrl: 'https://example.com/robots.txt',
});
const failure = (code: string, message = 'boom'): RobotsFetchOutcome => ({ kind: 'error', code, message });

const rulesEntry = (body = BODY, fetchedAt = NOW - HOUR): RobotsEntry => ({
  kind: 'rules',
  status: 200,
  body,
  fetchedAt,
  expiresAt: fetchedAt + DAY,
});

describe('entryFromFetch: status → entry', () => {
  it.each([
    ['200', response(200, BODY), 'rules'],
    ['204 (no body)', response(204), 'rules'],
    ['301 after 5 hops (RFC 9309 §2.3.1.2 → §2.3.1.3)', response(301), 'allow-all'],
    ['308 after 5 hops', response(308), 'allow-all'],
    ['too many redirects reported as an error', failure('ERR_TOO_MANY_REDIRECTS', '6 redirects'), 'allow-all'],
    ['400', response(400), 'allow-all'],
    ['401', response(401), 'allow-all'],
    ['403', response(403), 'allow-all'],
    ['404', response(404), 'allow-all'],
    ['410', response(410), 'allow-all'],
    ['429', response(429), 'unavailable'],
    ['500', response(500), 'unavailable'],
    ['503', response(503), 'unavailable'],
    ['599', response(599), 'unavailable'],
    ['1xx (never final)', response(100), 'unavailable'],
    ['timeout', failure('ERR_FETCH_TIMEOUT', 'no response in 20000 ms'), 'unavailable'],
    ['connection refused', failure('ERR_FETCH_NETWORK', 'ECONNREFUSED'), 'unavailable'],
    ['SSRF refusal', failure('ERR_SSRF', '10.0.0.1 is private'), 'unavailable'],
  ])('%s → %s', (_name, outcome, kind) => {
    const entry = entryFromFetch(outcome, null, NOW, options);
    expect(entry.kind).toBe(kind);
    if (entry.kind === 'unavailable') {
      expect(entry).toMatchObject({ since: NOW, failures: 1, retryAt: NOW + MINUTE, lastGood: null });
    } else {
      expect(entry).toMatchObject({ fetchedAt: NOW, expiresAt: NOW + DAY });
    }
  });

  it('keeps the status and the reason', () => {
    expect(entryFromFetch(response(404), null, NOW, options)).toEqual({ kind: 'allow-all', status: 404, fetchedAt: NOW, expiresAt: NOW + DAY });
    expect(entryFromFetch(failure('ERR_TOO_MANY_REDIRECTS'), null, NOW, options)).toMatchObject({ kind: 'allow-all', status: 0 });
    expect(entryFromFetch(response(503), null, NOW, options)).toMatchObject({ reason: 'HTTP 503' });
    expect(entryFromFetch(failure('ERR_FETCH_TIMEOUT', 'slow'), null, NOW, options)).toMatchObject({ reason: 'ERR_FETCH_TIMEOUT: slow' });
  });

  it('stores a 2xx body as text, cut to 500 KiB, invalid UTF-8 replaced', () => {
    const body = Buffer.concat([Buffer.from('User-agent: trawl\nDisallow: /a'), Buffer.from([0xc3, 0x28]), Buffer.from('\n')]);
    const entry = entryFromFetch({ kind: 'response', status: 200, body, finalUrl: 'x' }, null, NOW, options);
    expect(entry).toEqual({ kind: 'rules', status: 200, body: 'User-agent: trawl\nDisallow: /a\uFFFD(\n', fetchedAt: NOW, expiresAt: NOW + DAY });

    const huge = Buffer.from(`User-agent: trawl\nDisallow: /x\n${'#\n'.repeat(ROBOTS_MAX_BYTES)}`);
    const cut = entryFromFetch({ kind: 'response', status: 200, body: huge, finalUrl: 'x' }, null, NOW, options);
    if (cut.kind !== 'rules') throw new Error('expected rules');
    // Cut at the last line end within the limit.
    expect(Buffer.byteLength(cut.body)).toBeLessThanOrEqual(ROBOTS_MAX_BYTES);
    expect(Buffer.byteLength(cut.body)).toBeGreaterThan(ROBOTS_MAX_BYTES - 3);
    expect(cut.body.endsWith('\n')).toBe(true);
  });

  it('never trusts a copy for more than 24 h (RFC 9309 §2.4)', () => {
    const entry = entryFromFetch(response(200), null, NOW, { ...options, ttlMs: 7 * DAY });
    expect(entry).toMatchObject({ expiresAt: NOW + ROBOTS_MAX_TTL_MS });
  });
});

describe('entryFromFetch: failure streak', () => {
  it('doubles the retry delay per consecutive failure, capped at the TTL, keeping since and lastGood', () => {
    const good = rulesEntry(BODY, NOW - 2 * DAY);
    let entry: RobotsEntry = good;
    let now = NOW;
    const delays: number[] = [];
    for (let i = 0; i < 14; i++) {
      entry = entryFromFetch(i % 2 === 0 ? response(503) : failure('ERR_FETCH_TIMEOUT'), entry, now, options);
      if (entry.kind !== 'unavailable') throw new Error('expected unavailable');
      expect(entry.failures).toBe(i + 1);
      expect(entry.since).toBe(NOW);
      expect(entry.lastGood).toEqual({ body: BODY, fetchedAt: NOW - 2 * DAY });
      delays.push(entry.retryAt - now);
      now = entry.retryAt;
    }
    expect(delays).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1440, 1440, 1440].map((m) => m * MINUTE));
  });

  it.each([
    ['after a rules copy: its body', rulesEntry(BODY, NOW - DAY), { body: BODY, fetchedAt: NOW - DAY }],
    ['after allow-all: an empty body (allows everything)', { kind: 'allow-all', status: 404, fetchedAt: NOW - DAY, expiresAt: NOW } as RobotsEntry, { body: '', fetchedAt: NOW - DAY }],
    ['with nothing before: none', null, null],
  ])('lastGood %s', (_name, previous, lastGood) => {
    expect(entryFromFetch(response(500), previous, NOW, options)).toMatchObject({ kind: 'unavailable', lastGood, failures: 1, since: NOW });
  });

  it('a success ends the streak; the next failure starts a new one', () => {
    const failing = entryFromFetch(response(500), entryFromFetch(response(500), null, NOW, options), NOW + MINUTE, options);
    expect(failing).toMatchObject({ failures: 2 });
    const ok = entryFromFetch(response(200, BODY), failing, NOW + HOUR, options);
    expect(ok.kind).toBe('rules');
    expect(entryFromFetch(response(500), ok, NOW + 2 * HOUR, options)).toMatchObject({
      failures: 1,
      since: NOW + 2 * HOUR,
      retryAt: NOW + 2 * HOUR + MINUTE,
      lastGood: { body: BODY, fetchedAt: NOW + HOUR },
    });
  });

  it('a 4xx during an outage ends it too', () => {
    const failing = entryFromFetch(response(500), null, NOW, options);
    expect(entryFromFetch(response(404), failing, NOW + MINUTE, options).kind).toBe('allow-all');
  });
});

describe('needsFetch', () => {
  const allowAll: RobotsEntry = { kind: 'allow-all', status: 404, fetchedAt: NOW - DAY, expiresAt: NOW };
  const unavailable: RobotsEntry = { kind: 'unavailable', reason: 'HTTP 503', since: NOW - HOUR, failures: 3, retryAt: NOW, lastGood: null };
  it.each([
    ['nothing cached', null, NOW, true],
    ['rules, fresh', rulesEntry(BODY, NOW - HOUR), NOW, false],
    ['rules, expiring now', rulesEntry(BODY, NOW - DAY), NOW, true],
    ['rules, expired', rulesEntry(BODY, NOW - 2 * DAY), NOW, true],
    ['allow-all, before expiry', allowAll, NOW - 1, false],
    ['allow-all, at expiry', allowAll, NOW, true],
    ['unavailable, before retryAt', unavailable, NOW - 1, false],
    ['unavailable, at retryAt', unavailable, NOW, true],
    ['unavailable, after retryAt', unavailable, NOW + 1, true],
  ])('%s → %s', (_name, entry, now, expected) => {
    expect(needsFetch(entry, now)).toBe(expected);
  });
});

describe('decide', () => {
  const since = NOW - 30 * DAY;
  const outage = (lastGood: { body: string; fetchedAt: number } | null, startedAt = since): RobotsEntry => ({
    kind: 'unavailable',
    reason: 'HTTP 503',
    since: startedAt,
    failures: 40,
    retryAt: NOW + DAY,
    lastGood,
  });
  const lastGood = { body: BODY, fetchedAt: since - DAY };

  it.each([
    ['rules, allowed URL', rulesEntry(), URL_OK, options, { verdict: 'allow', crawlDelayMs: 2000 }],
    ['rules, disallowed URL', rulesEntry(), URL_NO, options, { verdict: 'disallow' }],
    ['rules, /robots.txt itself', rulesEntry('User-agent: *\nDisallow: /\n'), 'https://example.com/robots.txt', options, { verdict: 'allow', crawlDelayMs: null }],
    ['allow-all', { kind: 'allow-all', status: 404, fetchedAt: NOW, expiresAt: NOW + DAY } as RobotsEntry, URL_NO, options, { verdict: 'allow', crawlDelayMs: null }],
    ['unavailable, no lastGood', outage(null), URL_OK, options, { verdict: 'unavailable', retryAt: NOW + DAY }],
    ['unavailable, lastGood, outage shorter than the fallback', outage(lastGood, since + 1), URL_OK, options, { verdict: 'unavailable', retryAt: NOW + DAY }],
    ['unavailable, lastGood, outage as long as the fallback: allowed by the copy', outage(lastGood), URL_OK, options, { verdict: 'allow', crawlDelayMs: 2000 }],
    ['unavailable, lastGood, outage as long as the fallback: disallowed by the copy', outage(lastGood), URL_NO, options, { verdict: 'disallow' }],
    ['unavailable, no lastGood, outage past the fallback', outage(null, NOW - 100 * DAY), URL_OK, options, { verdict: 'unavailable' }],
    ['unavailable, lastGood, fallback off (0)', outage(lastGood, NOW - 100 * DAY), URL_OK, { ...options, outageFallbackMs: 0 }, { verdict: 'unavailable' }],
    ['unavailable, lastGood was allow-all', outage({ body: '', fetchedAt: since }), URL_NO, options, { verdict: 'allow', crawlDelayMs: null }],
    // Crawl-delay against the cap.
    ['crawl-delay under the cap', rulesEntry('User-agent: trawl\nCrawl-delay: 10\n'), URL_OK, options, { verdict: 'allow', crawlDelayMs: 10_000 }],
    ['crawl-delay at the cap', rulesEntry('User-agent: trawl\nCrawl-delay: 30\n'), URL_OK, skipOptions, { verdict: 'allow', crawlDelayMs: 30_000 }],
    ['crawl-delay over the cap, clamp', rulesEntry('User-agent: trawl\nCrawl-delay: 60\n'), URL_OK, options, { verdict: 'allow', crawlDelayMs: 30_000 }],
    ['crawl-delay over the cap, skip', rulesEntry('User-agent: trawl\nCrawl-delay: 60\n'), URL_OK, skipOptions, { verdict: 'skip-host' }],
    ['skip-host before disallow: one verdict per host', rulesEntry('User-agent: trawl\nCrawl-delay: 60\nDisallow: /private\n'), URL_NO, skipOptions, { verdict: 'skip-host' }],
    ['fractional crawl-delay', rulesEntry('User-agent: trawl\nCrawl-delay: 0.25\n'), URL_OK, options, { verdict: 'allow', crawlDelayMs: 250 }],
    ['no crawl-delay', rulesEntry('User-agent: trawl\nDisallow: /x\n'), URL_OK, options, { verdict: 'allow', crawlDelayMs: null }],
    ['crawl-delay of the copy, clamped', outage({ body: 'User-agent: *\nCrawl-delay: 90\n', fetchedAt: since }), URL_OK, options, { verdict: 'allow', crawlDelayMs: 30_000 }],
  ])('%s', (_name, entry, url, opts, expected) => {
    expect(decide(entry, url, NOW, opts)).toMatchObject(expected);
  });

  it('explains itself', () => {
    expect(decide(rulesEntry(), URL_NO, NOW, options)).toEqual({ verdict: 'disallow', reason: 'robots.txt Disallow: /private' });
    expect(decide(outage(lastGood), URL_NO, NOW, options)).toMatchObject({ reason: expect.stringMatching(/^robots\.txt Disallow: \/private \(copy of .*unreachable since/) });
    expect(decide(outage(null), URL_OK, NOW, options)).toMatchObject({ reason: expect.stringContaining('HTTP 503; 40 failures since') });
    expect(decide(rulesEntry('User-agent: trawl\nCrawl-delay: 60\n'), URL_OK, NOW, skipOptions)).toMatchObject({
      reason: 'robots.txt Crawl-delay 60s exceeds the cap of 30000 ms',
    });
  });

  it('never confuses two bodies fetched at the same moment (parse cache)', () => {
    const a = rulesEntry('User-agent: *\nDisallow: /a\n', NOW);
    const b = rulesEntry('User-agent: *\nDisallow: /b\n', NOW);
    expect(decide(a, 'https://example.com/a', NOW, options).verdict).toBe('disallow');
    expect(decide(b, 'https://example.com/a', NOW, options).verdict).toBe('allow');
    expect(decide(a, 'https://example.com/a', NOW, options).verdict).toBe('disallow');
  });

  it('keeps hosts apart (parse cache)', () => {
    const entry = rulesEntry('User-agent: *\nDisallow: /a\n', NOW);
    expect(decide(entry, 'https://one.example/a', NOW, options).verdict).toBe('disallow');
    expect(decide(entry, 'https://two.example/a', NOW, options).verdict).toBe('disallow');
    expect(decide(entry, 'https://two.example/b', NOW, options).verdict).toBe('allow');
  });

  it('parses a host’s robots.txt once, not per URL', () => {
    const entry = rulesEntry(`User-agent: *\n${Array.from({ length: 20_000 }, (_, i) => `Disallow: /s${i}/*/x$`).join('\n')}\n`, NOW);
    decide(entry, 'https://big.example/warm', NOW, options);
    const started = performance.now();
    for (let i = 0; i < 200; i++) decide(entry, `https://big.example/page-${i}`, NOW, options);
    // 200 parses of 20 000 rules would take seconds; 200 lookups take milliseconds.
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('serverError: a robots.txt 5xx read as permission (TRAWL_ROBOTS_SERVER_ERROR=allow)', () => {
  const permissive: RobotsOptions = { ...options, serverError: 'allow' };

  it('is off by default: a 5xx disallows everything (RFC 9309 §2.3.1.4)', () => {
    const entry = entryFromFetch(response(503), null, NOW, options);
    expect(entry).toMatchObject({ kind: 'unavailable', retryAt: NOW + MINUTE });
    expect(entry).not.toHaveProperty('permissive');
    expect(decide(entry, URL_OK, NOW, options).verdict).toBe('unavailable');
  });

  it.each([500, 502, 503, 599])('%i: everything allowed, robots.txt asked again in an hour', (status) => {
    const entry = entryFromFetch(response(status), null, NOW, permissive);
    expect(entry).toMatchObject({ kind: 'unavailable', permissive: true, retryAt: NOW + HOUR, failures: 1 });
    expect(decide(entry, URL_NO, NOW, permissive)).toEqual({ verdict: 'allow', crawlDelayMs: null });
    expect(needsFetch(entry, NOW + HOUR - 1)).toBe(false);
    expect(needsFetch(entry, NOW + HOUR)).toBe(true);
  });

  it('with a last good copy, its rules and Crawl-delay still apply', () => {
    const entry = entryFromFetch(response(500), rulesEntry(), NOW, permissive);
    expect(decide(entry, URL_OK, NOW, permissive)).toEqual({ verdict: 'allow', crawlDelayMs: 2 * SECOND });
    expect(decide(entry, URL_NO, NOW, permissive)).toMatchObject({ verdict: 'disallow', reason: expect.stringContaining('TRAWL_ROBOTS_SERVER_ERROR=allow') });
  });

  it.each([
    ['429', response(429)],
    ['a timeout', failure('ERR_FETCH_TIMEOUT')],
    ['a refused connection', failure('ERR_FETCH_NETWORK')],
  ])('%s still disallows: only a server error is read as permission', (_name, outcome) => {
    const entry = entryFromFetch(outcome, null, NOW, permissive);
    expect(entry).not.toHaveProperty('permissive');
    expect(decide(entry, URL_OK, NOW, permissive).verdict).toBe('unavailable');
  });

  it('a good fetch after it ends the permission', () => {
    const failed = entryFromFetch(response(503), null, NOW, permissive);
    const good = entryFromFetch(response(200, BODY), failed, NOW + HOUR, permissive);
    expect(decide(good, URL_NO, NOW + HOUR, permissive).verdict).toBe('disallow');
  });
});
