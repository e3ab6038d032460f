import { ManualClock } from '@trawl/core';
import { testConnection, testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { RobotsCache } from './cache.js';
import { entryFromFetch, type RobotsEntry, type RobotsOptions } from './policy.js';

const t = testRedis('robots');
// A second connection: what another worker process would have.
const other = testConnection({ name: 'trawl-robots-b' });
afterAll(async () => {
  other.disconnect();
  await t.cleanup();
});

const HOUR = 60 * 60 * 1000;
let n = 0;
/** Each test gets its own origin, so tests never see each other's keys. */
const nextOrigin = () => `https://host-${(n += 1)}.example`;

function setup(localTtlMs = 5_000) {
  const clock = new ManualClock();
  const problems: Array<[string, string]> = [];
  const options = { prefix: t.prefix, localTtlMs, clock, onCorrupt: (origin: string, problem: string) => problems.push([origin, problem]) };
  return { clock, problems, a: new RobotsCache(t.redis, options), b: new RobotsCache(other, options) };
}

const rules = (now: number, body = 'User-agent: *\nDisallow: /x\n'): RobotsEntry => ({ kind: 'rules', status: 200, body, fetchedAt: now, expiresAt: now + 24 * HOUR });

describe('RobotsCache', () => {
  it('round-trips every kind of entry between two workers', async () => {
    const { clock, a, b } = setup();
    const now = clock.now();
    const entries: RobotsEntry[] = [
      rules(now, 'User-agent: trawl\nDisallow: /é\n'),
      { kind: 'allow-all', status: 404, fetchedAt: now, expiresAt: now + HOUR },
      { kind: 'unavailable', reason: 'HTTP 503', since: now - HOUR, failures: 3, retryAt: now + HOUR, lastGood: { body: 'User-agent: *\n', fetchedAt: now - 2 * HOUR } },
      { kind: 'unavailable', reason: 'ERR_FETCH_TIMEOUT: slow', since: now, failures: 1, retryAt: now + 60_000, lastGood: null },
    ];
    for (const entry of entries) {
      const origin = nextOrigin();
      await a.set(origin, entry);
      expect(await b.get(origin)).toEqual(entry);
      expect(await b.lookup(origin)).toMatchObject({ source: 'local', problem: null });
    }
  });

  it('misses when nothing is stored', async () => {
    const { a } = setup();
    expect(await a.lookup(nextOrigin())).toEqual({ entry: null, source: 'missing', problem: null });
  });

  it('keeps one key per origin, whatever URL spelling names it, expiring a little after the entry', async () => {
    const { clock, a, b } = setup();
    const origin = nextOrigin();
    await a.set(`${origin.toUpperCase().replace('HTTPS', 'https')}:443/some/page?q=1`, rules(clock.now()));
    expect(await t.redis.exists(`${t.prefix}:robots:${origin}`)).toBe(1);
    expect((await b.get(origin))?.kind).toBe('rules');
    const ttl = await t.redis.pttl(`${t.prefix}:robots:${origin}`);
    expect(ttl).toBeGreaterThan(24 * HOUR);
    expect(ttl).toBeLessThanOrEqual(25 * HOUR);

    // An unavailable entry lives until a little after its retry time.
    const failing = nextOrigin();
    await a.set(failing, { kind: 'unavailable', reason: 'x', since: clock.now(), failures: 1, retryAt: clock.now() + 60_000, lastGood: null });
    expect(await t.redis.pttl(`${t.prefix}:robots:${failing}`)).toBeLessThanOrEqual(HOUR + 60_000);
  });

  it('serves its own copy for localTtlMs, then reads Redis again', async () => {
    const { clock, a, b } = setup(5_000);
    const origin = nextOrigin();
    const first = rules(clock.now(), 'User-agent: *\nDisallow: /first\n');
    await a.set(origin, first);
    expect(await b.lookup(origin)).toMatchObject({ entry: first, source: 'redis' });

    const second = rules(clock.now(), 'User-agent: *\nDisallow: /second\n');
    await a.set(origin, second);
    // The writer sees its own write at once.
    expect(await a.lookup(origin)).toMatchObject({ entry: second, source: 'local' });
    clock.advance(4_999);
    expect(await b.lookup(origin)).toMatchObject({ entry: first, source: 'local' });
    clock.advance(1);
    expect(await b.lookup(origin)).toMatchObject({ entry: second, source: 'redis' });
  });

  it('forgets a local copy once Redis no longer has the key', async () => {
    const { clock, a } = setup(1_000);
    const origin = nextOrigin();
    await a.set(origin, rules(clock.now()));
    await t.redis.del(`${t.prefix}:robots:${origin}`);
    expect((await a.lookup(origin)).source).toBe('local');
    clock.advance(1_000);
    expect(await a.lookup(origin)).toEqual({ entry: null, source: 'missing', problem: null });
  });

  it('holds at most localMax entries in process', async () => {
    const clock = new ManualClock();
    const cache = new RobotsCache(t.redis, { prefix: t.prefix, clock, localMax: 2 });
    const [x, y, z] = [nextOrigin(), nextOrigin(), nextOrigin()];
    for (const origin of [x, y, z]) await cache.set(origin, rules(clock.now()));
    expect((await cache.lookup(x)).source).toBe('redis');
    expect((await cache.lookup(z)).source).toBe('local');
  });

  it.each([
    ['not JSON', '{nope', /^not JSON/],
    ['JSON of another shape', JSON.stringify({ kind: 'rules', status: 200 }), /^not a robots entry: body/],
    ['an unknown kind', JSON.stringify({ kind: 'maybe' }), /^not a robots entry/],
    ['a number', '42', /^not a robots entry/],
    ['a failure streak of zero', JSON.stringify({ kind: 'unavailable', reason: 'x', since: 1, failures: 0, retryAt: 2, lastGood: null }), /failures/],
  ])('treats a corrupt stored value as missing and says why: %s', async (_name, raw, why) => {
    const { a, problems } = setup();
    const origin = nextOrigin();
    await t.redis.set(`${t.prefix}:robots:${origin}`, raw);
    const found = await a.lookup(origin);
    expect(found.entry).toBeNull();
    expect(found.source).toBe('corrupt');
    expect(found.problem).toMatch(why);
    expect(await a.get(origin)).toBeNull();
    expect(problems).toEqual([
      [origin, found.problem],
      [origin, found.problem],
    ]);
    // A fresh fetch simply overwrites it.
    await a.set(origin, rules(0));
    expect((await a.get(origin))?.kind).toBe('rules');
  });

  it('keeps the last good copy past its key\'s expiry while robots.txt is failing, so the outage fallback can use it', async () => {
    const origin = nextOrigin();
    const clock = new ManualClock(Date.now());
    // Entries expire (and their Redis keys with them, 40 ms of grace later) within 60 ms of real time.
    const cache = new RobotsCache(t.redis, { prefix: t.prefix, localTtlMs: 0, clock, redisGraceMs: 40, keepLastGoodMs: 60_000 });
    const options: RobotsOptions = { productToken: 'trawl', ttlMs: 20, retryBaseMs: 20, outageFallbackMs: 30 * 24 * HOUR, maxCrawlDelayMs: 30_000, overCap: 'clamp' };
    const body = 'User-agent: *\nDisallow: /private\n';
    const sleep = () => new Promise((r) => setTimeout(r, 150));

    // A good copy, then its key's lifetime passes with no fetch at all (the host was idle).
    await cache.set(origin, entryFromFetch({ kind: 'response', status: 200, body: Buffer.from(body), finalUrl: `${origin}/robots.txt` }, null, clock.now(), options));
    await sleep();
    clock.advance(150);
    // robots.txt now fails: the new entry must still carry the good copy.
    const failed = entryFromFetch({ kind: 'response', status: 503, body: Buffer.alloc(0), finalUrl: `${origin}/robots.txt` }, await cache.get(origin), clock.now(), options);
    expect(failed).toMatchObject({ kind: 'unavailable', lastGood: { body } });
    await cache.set(origin, failed);
    // The failing entry's own retry time and grace pass too: the copy is still there.
    await sleep();
    clock.advance(150);
    expect(await cache.get(origin)).toMatchObject({ kind: 'unavailable', lastGood: { body } });
  });
});
