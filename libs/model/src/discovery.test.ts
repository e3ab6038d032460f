import { loadConfig } from '@trawl/config';
import { ErrorCode, systemClock } from '@trawl/core';
import { testDatabase } from '@trawl/db/testing';
import { Frontier, type PushItem, UrlFlag } from '@trawl/frontier';
import { testRedis } from '@trawl/redis/testing';
import { createBloomFilter, SeenSet } from '@trawl/seen';
import { silentLogger } from '@trawl/telemetry';
import { parseRobots } from '@trawl/robots';
import { fingerprint } from '@trawl/url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Counters } from './counters.js';
import { candidatesFromLinks, Discovery, type DiscoveryDeps, linkSkipReason, seedCandidate } from './discovery.js';
import { policyFromConfig, resolvePolicy, type ResolvedPolicy } from './policy.js';

const policyFor = (env: Record<string, string> = {}): ResolvedPolicy => resolvePolicy(policyFromConfig(loadConfig({ env: { TRAWL_SCOPE: 'any', ...env } }), []));
const links = (...paths: string[]) => paths.map((p) => ({ url: `http://${p}`, nofollow: false }));
const page = (host: string) => ({ url: `http://${host}/`, hash: fingerprint(`http://${host}/`), depth: 0 });

const t = testRedis('discovery');
let db: Awaited<ReturnType<typeof testDatabase>>;
let deps: Omit<DiscoveryDeps, 'robotsVerdicts'>;

beforeAll(async () => {
  db = await testDatabase('discovery');
  const bloom = await createBloomFilter(t.redis, { prefix: t.prefix, capacity: 10_000, errorRate: 0.01, shards: 1 }, 'lua');
  deps = {
    seen: new SeenSet(bloom, db.db),
    db: db.db,
    frontier: new Frontier(t.redis, { prefix: t.prefix, partitions: 1, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 250, maxUrlsPerHost: 0, clock: systemClock }),
    counters: new Counters(t.redis, t.prefix, 60_000),
    logger: silentLogger,
    limits: () => ({ maxUrlsPerHost: 0, maxQueryVariants: 0, maxDateVariants: 0 }),
  };
});

afterAll(async () => {
  await deps.counters.flush();
  await db.cleanup();
  await t.cleanup();
});

/** Every `urls` row of a host: state and skip reason, by path. */
async function rowsOf(host: string): Promise<Record<string, { state: string; reason: string | null }>> {
  const { rows } = await db.db.pool.query<{ url: string; state: string; skip_reason: string | null }>(
    `SELECT url, state, skip_reason FROM "${db.schema}".urls WHERE host = $1`,
    [host],
  );
  return Object.fromEntries(rows.map((r) => [new URL(r.url).pathname + new URL(r.url).search, { state: r.state, reason: r.skip_reason }]));
}

describe('linkSkipReason', () => {
  it.each<[string, Record<string, string>, string, boolean]>([
    ['a PDF, non-HTML skipped', {}, 'http://a.example/report.pdf', true],
    ['a page', {}, 'http://a.example/report.html', false],
    ['a PDF named only in the query', {}, 'http://a.example/get?file=report.pdf', false],
    ['a PDF, non-HTML stored', { TRAWL_NON_HTML: 'store' }, 'http://a.example/report.pdf', false],
    ['a PDF, non-HTML stored but pdf listed', { TRAWL_NON_HTML: 'store', TRAWL_SKIP_EXTENSIONS: 'pdf' }, 'http://a.example/report.pdf', true],
    ['an image, only pdf listed', { TRAWL_SKIP_EXTENSIONS: 'pdf' }, 'http://a.example/photo.jpg', false],
  ])('%s', (_name, env, url, skipped) => {
    const reason = linkSkipReason(url, policyFor(env));
    if (skipped) expect(reason).toMatch(new RegExp(`^${ErrorCode.ContentType}: links to \\.\\w+ files are not fetched`));
    else expect(reason).toBeNull();
  });
});

describe('candidatesFromLinks', () => {
  it('marks links to skipped file types and counts them; the rest are plain candidates', async () => {
    const counters = new Counters(t.redis, `${t.prefix}:pure`, 60_000);
    const found = candidatesFromLinks(
      links('c.example/a', 'c.example/report.pdf', 'c.example/IMG.JPG', 'c.example/get?f=x.pdf', 'c.example/report.pdf', 'c.example/src.tar.gz'),
      page('c.example'),
      policyFor(),
      counters,
      Date.now(),
    );
    expect(found.map((c) => [new URL(c.url).pathname, c.skipReason !== undefined])).toEqual([
      ['/a', false],
      ['/report.pdf', true],
      ['/IMG.JPG', true],
      ['/get', false],
      ['/src.tar.gz', true],
    ]);
    expect(counters.local.skippedExtensions).toBe(3);
    await counters.flush();
  });

  it('honours a seed\'s own depth limit and passes it on', () => {
    const counters = new Counters(t.redis, `${t.prefix}:depth`, 60_000);
    const at = (depth: number) => ({ ...page('e.example'), depth, maxDepth: 2 });
    const children = candidatesFromLinks(links('e.example/a'), at(1), policyFor(), counters, Date.now());
    expect(children).toMatchObject([{ depth: 2, maxDepth: 2 }]);
    expect(candidatesFromLinks(links('e.example/b'), at(2), policyFor(), counters, Date.now())).toEqual([]);
  });
});

describe('Discovery', () => {
  it('records links to skipped file types as skipped, with the reason, and never queues them', async () => {
    const discovery = new Discovery(deps);
    const before = await deps.frontier.stats();
    const candidates = candidatesFromLinks(links('d.example/a', 'd.example/b', 'd.example/report.pdf', 'd.example/photo.png'), page('d.example'), policyFor(), deps.counters, Date.now());
    expect(await discovery.add(candidates)).toEqual({ queued: 2, known: 2 });
    const rows = await rowsOf('d.example');
    expect(rows['/a']?.state).toBe('queued');
    expect(rows['/b']?.state).toBe('queued');
    expect(rows['/report.pdf']).toEqual({ state: 'skipped', reason: expect.stringContaining('links to .pdf files are not fetched') });
    expect(rows['/photo.png']).toEqual({ state: 'skipped', reason: expect.stringContaining(ErrorCode.ContentType) });
    expect((await deps.frontier.stats()).queued - before.queued).toBe(2);
    expect((await deps.frontier.hostState('d.example')).total).toBe(2);

    // Found again: known (seen-set), neither queued nor inserted twice.
    const again = candidatesFromLinks(links('d.example/report.pdf', 'd.example/a'), page('d.example'), policyFor(), deps.counters, Date.now());
    expect(await discovery.add(again)).toEqual({ queued: 0, known: 2 });
    expect(Object.keys(await rowsOf('d.example')).sort()).toEqual(['/a', '/b', '/photo.png', '/report.pdf']);
    expect((await deps.frontier.hostState('d.example')).total).toBe(2);
    await discovery.drain();
  });

  it('asks robots.txt only about links it has not already skipped', async () => {
    const asked: string[] = [];
    const discovery = new Discovery({
      ...deps,
      robotsVerdicts: async (urls) => {
        asked.push(...urls);
        return urls.map((u) => (new URL(u).pathname.startsWith('/private') ? `${ErrorCode.RobotsDisallowed}: Disallow: /private` : null));
      },
    });
    const candidates = candidatesFromLinks(
      links('e.example/ok', 'e.example/private/x', 'e.example/private/doc.pdf', 'e.example/doc.pdf'),
      page('e.example'),
      policyFor(),
      deps.counters,
      Date.now(),
    );
    expect(await discovery.add(candidates)).toEqual({ queued: 1, known: 3 });
    expect(asked.map((u) => new URL(u).pathname).sort()).toEqual(['/ok', '/private/x']);
    const rows = await rowsOf('e.example');
    expect(rows['/ok']?.state).toBe('queued');
    expect(rows['/private/x']).toEqual({ state: 'skipped', reason: `${ErrorCode.RobotsDisallowed}: Disallow: /private` });
    expect(rows['/private/doc.pdf']?.reason).toContain('links to .pdf files');
    expect(rows['/doc.pdf']?.state).toBe('skipped');
    await discovery.drain();
  });

  it('asks robots.txt about the URL as the site spelled it too, when normalization reordered or stripped its parameters', async () => {
    const rules = parseRobots('http://s.example/robots.txt', 'User-agent: *\nDisallow: /search?q=\nDisallow: /*utm_source=\n', 'trawl');
    const asked: string[] = [];
    const discovery = new Discovery({
      ...deps,
      robotsVerdicts: async (urls) => {
        asked.push(...urls);
        return urls.map((u) => (rules.isAllowed(u) ? null : `${ErrorCode.RobotsDisallowed}: ${rules.matchingRule(u)?.pattern}`));
      },
    });
    const candidates = candidatesFromLinks(links('s.example/search?q=shoes&page=2', 's.example/search?page=3', 's.example/list?utm_source=news&id=1', 's.example/a?b=1&c=2'), page('s.example'), policyFor(), deps.counters, Date.now());
    // Canonical forms sort and strip: /search?page=2&q=shoes and /list?id=1 are allowed as such.
    expect(candidates.map((c) => [c.url, c.spelled])).toEqual([
      ['http://s.example/search?page=2&q=shoes', 'http://s.example/search?q=shoes&page=2'],
      ['http://s.example/search?page=3', undefined],
      ['http://s.example/list?id=1', 'http://s.example/list?utm_source=news&id=1'],
      ['http://s.example/a?b=1&c=2', undefined],
    ]);
    expect(await discovery.add(candidates)).toEqual({ queued: 2, known: 2 });
    const rows = await rowsOf('s.example');
    expect(rows['/search?page=2&q=shoes']).toEqual({ state: 'skipped', reason: `${ErrorCode.RobotsDisallowed}: /search?q=` });
    expect(rows['/list?id=1']).toEqual({ state: 'skipped', reason: `${ErrorCode.RobotsDisallowed}: /*utm_source=` });
    expect(rows['/search?page=3']?.state).toBe('queued');
    expect(rows['/a?b=1&c=2']?.state).toBe('queued');
    // One round trip, each spelling asked once.
    expect(asked).toHaveLength(6);
    await discovery.drain();
  });

  it('queues such links when the crawl stores non-HTML bodies', async () => {
    const discovery = new Discovery(deps);
    const candidates = candidatesFromLinks(links('f.example/report.pdf'), page('f.example'), policyFor({ TRAWL_NON_HTML: 'store' }), deps.counters, Date.now());
    expect(await discovery.add(candidates)).toEqual({ queued: 1, known: 0 });
    expect((await rowsOf('f.example'))['/report.pdf']?.state).toBe('queued');
    await discovery.drain();
  });
});

describe('Discovery: links of a page processed again after its first try died', () => {
  it('pushes, flagged Verify, the links the dead try inserted but never queued; a first try leaves them to the repair sweep', async () => {
    const candidates = () => candidatesFromLinks(links('r.example/a', 'r.example/b', 'r.example/report.pdf'), page('r.example'), policyFor(), deps.counters, Date.now());
    // The first try dies between the insert and the push (its frontier is gone).
    const dying = new Discovery({ ...deps, frontier: { push: () => Promise.reject(new Error('connection lost')) } as unknown as Frontier }, { maxBatch: 100, maxWaitMs: 1 });
    await expect(dying.add(candidates())).rejects.toThrow('connection lost');
    expect(Object.fromEntries(Object.entries(await rowsOf('r.example')).map(([path, r]) => [path, r.state]))).toEqual({ '/a': 'new', '/b': 'new', '/report.pdf': 'skipped' });

    const discovery = new Discovery(deps);
    const before = (await deps.frontier.stats()).queued;
    // Seen already: an ordinary add does not push them again.
    expect(await discovery.add(candidates())).toEqual({ queued: 0, known: 3 });
    expect((await deps.frontier.stats()).queued).toBe(before);
    // The retried page's add does, and only the unqueued ones.
    expect(await discovery.add(candidates(), { recheck: true })).toEqual({ queued: 2, known: 1 });
    expect((await deps.frontier.stats()).queued - before).toBe(2);
    expect(Object.fromEntries(Object.entries(await rowsOf('r.example')).map(([path, r]) => [path, r.state]))).toEqual({ '/a': 'queued', '/b': 'queued', '/report.pdf': 'skipped' });
    // Once queued, a further retry pushes nothing.
    expect(await discovery.add(candidates(), { recheck: true })).toEqual({ queued: 0, known: 3 });
    expect((await deps.frontier.stats()).queued - before).toBe(2);
    await discovery.drain();
  });
});

describe('Discovery: a step that fails once', () => {
  it('retries the push alone, its copies flagged Verify, and confirms the URLs queued (none left to the repair sweep)', async () => {
    let calls = 0;
    const pushed: number[][] = [];
    const flaky = {
      push: (items: PushItem[], limits: Parameters<Frontier['push']>[1]) => {
        calls += 1;
        pushed.push(items.map((i) => i.flags));
        // The first push lands in Redis, then its answer is lost.
        return calls === 1 ? deps.frontier.push(items, limits).then(() => Promise.reject(new Error('reply lost'))) : deps.frontier.push(items, limits);
      },
    } as unknown as Frontier;
    const discovery = new Discovery({ ...deps, frontier: flaky }, { maxBatch: 100, maxWaitMs: 1 });
    const candidates = candidatesFromLinks(links('push-retry.example/a', 'push-retry.example/b'), page('push-retry.example'), policyFor(), deps.counters, Date.now());
    expect(await discovery.add(candidates)).toEqual({ queued: 2, known: 0 });
    expect(calls).toBe(2);
    expect(pushed[0]?.every((f) => (f & UrlFlag.Verify) === 0)).toBe(true);
    expect(pushed[1]?.every((f) => (f & UrlFlag.Verify) !== 0)).toBe(true);
    expect(Object.values(await rowsOf('push-retry.example')).map((r) => r.state)).toEqual(['queued', 'queued']);
    await discovery.drain();
  });
});

describe('Discovery: what the frontier refuses', () => {
  it('records URLs over the host budget or the query-variant cap as skipped with the reason, and counts only what was queued', async () => {
    const discovery = new Discovery({ ...deps, limits: () => ({ maxUrlsPerHost: 3, maxQueryVariants: 2, maxDateVariants: 0 }) });
    const candidates = candidatesFromLinks(
      links('g.example/cal?d=1', 'g.example/cal?d=2', 'g.example/cal?d=3', 'g.example/a', 'g.example/b', 'g.example/c'),
      page('g.example'),
      policyFor(),
      deps.counters,
      Date.now(),
    );
    const before = (await deps.frontier.stats()).queued;
    expect(await discovery.add(candidates)).toEqual({ queued: 3, known: 3 });
    expect((await deps.frontier.stats()).queued - before).toBe(3);
    const rows = await rowsOf('g.example');
    const states = Object.fromEntries(Object.entries(rows).map(([path, r]) => [path, r.state]));
    expect(Object.values(states).filter((s) => s === 'queued')).toHaveLength(3);
    expect(rows['/cal?d=3']).toEqual({ state: 'skipped', reason: expect.stringMatching(new RegExp(`^${ErrorCode.QueryVariants}: .*TRAWL_MAX_QUERY_VARIANTS`)) });
    const overBudget = Object.entries(rows).filter(([, r]) => r.reason?.startsWith(ErrorCode.HostBudget));
    expect(overBudget.length).toBe(2);
    for (const [, r] of overBudget) expect(r).toEqual({ state: 'skipped', reason: expect.stringContaining('TRAWL_MAX_URLS_PER_HOST') });
    await discovery.drain();
  });
});

describe('Discovery: what links and seeds tell of their hosts', () => {
  it('notes every distinct linking host, also of links to URLs already known, and the seeds\' priority', async () => {
    const discovery = new Discovery(deps);
    const policy = policyFor();
    const from = (host: string) => candidatesFromLinks(links('rank-target.example/'), page(host), policy, deps.counters, Date.now());
    await discovery.add(from('linker-a.example'));
    // The target is known from here on; its later in-links still count, each linking host once.
    await discovery.add([...from('linker-b.example'), ...from('linker-b.example'), ...from('rank-target.example')]);
    const seed = seedCandidate('http://rank-seed.example/', policy);
    if ('error' in seed) throw new Error(seed.error);
    await discovery.add([{ ...seed, priority: 0.7 }]);
    const [target, seeded] = await deps.frontier.hostScores(['rank-target.example', 'rank-seed.example']);
    expect(target).toMatchObject({ inLinkHosts: 2, seedPriority: 0 });
    expect(seeded).toMatchObject({ inLinkHosts: 0, seedPriority: 0.7 });
  });
});
