import { OperatorQueries } from '@trawl/db';
import { loadConfig } from '@trawl/config';
import { ManualClock } from '@trawl/core';
import { PolicyStore } from '@trawl/model';
import { discovered, fp, record, testDatabase } from '@trawl/db/testing';
import { Frontier, type Lease, UrlFlag } from '@trawl/frontier';
import { testRedis } from '@trawl/redis/testing';
import { createBloomFilter } from '@trawl/seen';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildFrontier, type RebuildDeps, rebuildKey, rebuildStalled } from './rebuild.js';

/**
 * `trawl frontier rebuild` against real Redis and PostgreSQL: Redis lost a crawl (nothing of it
 * left), PostgreSQL knows every URL. The rebuild hands the crawl back before its scan, is
 * interrupted half-way and run again; URLs the live crawl queues meanwhile are left to it. Judged from the frontier: every URL not settled is
 * queued exactly once, flagged Verify.
 */
const t = testRedis('rebuild');
let db: Awaited<ReturnType<typeof testDatabase>>;
const namespace = `${t.prefix}r`;
const config = loadConfig({ env: { TRAWL_NAMESPACE: 't_rebuild', TRAWL_SCOPE: 'domain' } });
const clock = new ManualClock(Date.now());
const frontier = new Frontier(t.redis, { prefix: namespace, partitions: 2, bands: 4, leaseMs: 300_000, fetchHoldMs: 65_000, busyRetryMs: 250, maxUrlsPerHost: 0, clock });
let settingsRecorded = 0;
let overridesRestored = 0;
let deps: RebuildDeps;

// One URL per host, so a single claim takes every queued URL at once.
const u = (name: string) => `http://${name}.example/`;
const QUEUED = ['q1', 'q2', 'q3', 'q4', 'q5'].map(u);
const NEW = u('n1');
const SEED = u('seed');
const DONE = ['d1', 'd2'].map(u);
const FAILED = u('f1');
const SKIPPED = u('k1');
const RECRAWL = u('r1');

beforeAll(async () => {
  db = await testDatabase('rebuild');
  const bloom = await createBloomFilter(t.redis, { prefix: namespace, capacity: 10_000, errorRate: 0.01, shards: 1 }, 'lua');
  deps = {
    redis: t.redis,
    namespace,
    db: db.db,
    frontier,
    bloom,
    policyStore: new PolicyStore(t.redis, namespace),
    config,
    recordSettings: async () => void (settingsRecorded += 1),
    markLive: () => frontier.markLive(),
    // As the runtime's restorePauses: the operator pauses kept in PostgreSQL, back into Redis.
    restorePauses: async () => {
      const rows = await new OperatorQueries(db.db.pool, db.schema).pausedHosts();
      if (rows.length > 0) await frontier.pauseHosts(rows.map((r) => r.host));
      return rows.length;
    },
    // The runtime's restoreRenderOverrides is tested on a real runtime (the scheduler's tests).
    restoreRenderOverrides: async () => {
      overridesRestored += 1;
      return 0;
    },
    settingsPresent: async () => settingsRecorded > 0,
    fetchHoldMs: 65_000,
    clock,
    logger: silentLogger,
  };
  // The crawl as PostgreSQL remembers it.
  await db.db.insertDiscovered([...QUEUED, NEW, ...DONE, FAILED, RECRAWL].map((url) => discovered(url)));
  await db.db.insertDiscovered([{ ...discovered(SEED, 0) }, { ...discovered(SKIPPED), skipReason: 'ERR_ROBOTS_DISALLOWED: /' }]);
  await db.db.markQueued([...QUEUED, SEED, ...DONE, FAILED, RECRAWL].map(fp));
  await db.db.recordPages([...DONE, RECRAWL].map((url) => record(url)));
  await db.db.recordPages([record(FAILED, { state: 'failed', httpStatus: 500 })]);
  // The re-crawl sweep had taken r1 again (done → new → queued) when Redis was lost.
  await db.db.pool.query(`UPDATE "${db.schema}".urls SET state = 'queued' WHERE url_hash = $1`, [fp(RECRAWL)]);
  await db.db.pool.query(`UPDATE "${db.schema}".urls SET updated_at = now() - interval '1 minute'`);
});

afterAll(async () => {
  await db.cleanup();
  await t.cleanup();
});

describe('rebuildFrontier', () => {
  it('queues every unsettled URL once across an interrupted run, leaves what the live crawl queued, restores the seen-set, policy and settings', async () => {
    // An operator had paused a host; the pause survives in PostgreSQL only.
    await new OperatorQueries(db.db.pool, db.schema).setPaused(['paused.example'], true, 'test');

    // The first run dies after its second step.
    let steps = 0;
    await expect(
      rebuildFrontier(deps, {
        batch: 3,
        onProgress: () => {
          steps += 1;
          if (steps === 2) throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    // It had handed the crawl back before its scan: settings, policy, pauses, live marks. The
    // hosts of its first two steps are crawlable already; the rest wait for the scan to resume.
    expect(settingsRecorded).toBe(1);
    expect(overridesRestored).toBe(1);
    expect(await frontier.isPaused('paused.example')).toBe(true);
    expect((await deps.policyStore.load())?.scope.domains).toContain('seed.example');
    expect(await t.redis.hget(rebuildKey(namespace), 'cursor')).toMatch(/^[0-9a-f]{32}$/);
    const early = (await frontier.stats()).queued;
    expect(early).toBeGreaterThan(0);
    expect(early).toBeLessThan(8);
    // Stalled: a scheduler with TRAWL_AUTO_REBUILD resumes it once it has not moved for a while.
    expect(await rebuildStalled(t.redis, namespace, clock.now(), 10_000)).toBe(false);
    expect(await rebuildStalled(t.redis, namespace, clock.now() + 10_001, 10_000)).toBe(true);

    // Meanwhile the live crawl (an in-flight job finishing) discovers and queues a URL itself.
    const LIVE = u('live');
    await db.db.insertDiscovered([discovered(LIVE)]);
    await frontier.push([{ url: LIVE, host: 'live.example', depth: 1, hops: 0, flags: 0, priority: 0.5 }]);
    await db.db.markQueued([fp(LIVE)]);

    // Run again without --force: the crawl looks intact (its settings are back), but the scan was
    // not finished, so it resumes at its cursor.
    const report = await rebuildFrontier(deps, { batch: 3 });
    expect(report).toMatchObject({ resumed: true, seeds: 1, leftToCrawl: 1 });
    expect(await frontier.isPaused('paused.example')).toBe(true);
    expect(settingsRecorded).toBe(1);
    // The resumed run does not hand back again.
    expect(overridesRestored).toBe(1);
    expect(await t.redis.exists(rebuildKey(namespace))).toBe(0);
    expect(await rebuildStalled(t.redis, namespace, clock.now() + 60_000, 10_000)).toBe(false);

    const expected = [...QUEUED, NEW, SEED, RECRAWL, LIVE].sort();
    expect((await frontier.stats()).queued).toBe(expected.length);
    // No restored host is due before the rebuild began plus the fetch hold (a fetch in flight when
    // Redis was lost may go on that long, its host token lost with Redis).
    const leases: Lease[] = [];
    for (let p = 0; p < 2; p += 1) leases.push(...(await frontier.claim(p, 100)).leases);
    expect(leases.map((l) => l.url)).toEqual([LIVE]);
    expect((await frontier.hostState('q1.example')).due).toBeGreaterThanOrEqual(clock.now() + 65_000);
    clock.advance(65_001);
    for (let p = 0; p < 2; p += 1) leases.push(...(await frontier.claim(p, 100)).leases);
    expect(leases.map((l) => l.url).sort()).toEqual(expected);
    const byUrl = new Map(leases.map((l) => [l.url, l]));
    for (const url of expected.filter((x) => x !== LIVE)) expect((byUrl.get(url)?.flags ?? 0) & UrlFlag.Verify).toBe(UrlFlag.Verify);
    expect((byUrl.get(RECRAWL)?.flags ?? 0) & UrlFlag.Recrawl).toBe(UrlFlag.Recrawl);
    expect((byUrl.get(SEED)?.flags ?? 0) & UrlFlag.Seed).toBe(UrlFlag.Seed);
    expect(byUrl.get(SEED)?.band).toBe(3);
    // Settled URLs count in their hosts' budgets again; skipped ones were never queued.
    expect((await frontier.hostState('d1.example')).total).toBe(1);
    expect((await frontier.hostState('k1.example')).total).toBe(0);

    // PostgreSQL: the URL left `new` by a crash is queued now.
    expect((await db.db.urlStates([fp(NEW)])).get(fp(NEW).toString('latin1'))).toBe('queued');
    // The seen-set knows every URL.
    expect(await deps.bloom.addIfNew([...expected, ...DONE, FAILED, SKIPPED].map(fp))).toEqual(new Array(expected.length + 4).fill(false));
    // The policy is back, with the seed's domain in scope.
    expect((await deps.policyStore.load())?.scope.domains).toContain('seed.example');

    // Run again on the intact namespace: refused, nothing queued twice.
    await expect(rebuildFrontier(deps)).rejects.toThrow(/is intact/);
    expect((await frontier.stats()).queued).toBe(0);
  });
});
