import { loadConfig } from '@trawl/config';
import { ManualClock } from '@trawl/core';
import { testDatabase } from '@trawl/db/testing';
import { Frontier } from '@trawl/frontier';
import { Counters, Discovery, FrontierRefill, PolicyStore } from '@trawl/model';
import { deleteByPrefix } from '@trawl/redis';
import { testRedis } from '@trawl/redis/testing';
import { createBloomFilter, SeenSet } from '@trawl/seen';
import { silentLogger } from '@trawl/telemetry';
import { fingerprint } from '@trawl/url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildFrontier } from './rebuild.js';

/**
 * `trawl frontier rebuild` of a frontier that had spilled URLs to PostgreSQL (past
 * TRAWL_FRONTIER_REDIS_MAX_URLS): the rebuild restores what Redis held, leaves the spilled URLs
 * in PostgreSQL with their hosts' counts, and refills bring them back — every URL fetched once.
 */
const t = testRedis('rebuild-spill');
let db: Awaited<ReturnType<typeof testDatabase>>;
const namespace = `${t.prefix}s`;
const clock = new ManualClock(Date.now());
const frontier = new Frontier(t.redis, {
  prefix: namespace,
  partitions: 2,
  bands: 4,
  leaseMs: 300_000,
  fetchHoldMs: 1000,
  busyRetryMs: 250,
  maxUrlsPerHost: 0,
  redisMaxUrls: 10,
  hostHeadUrls: 2,
  clock,
});
const HOSTS = ['a.example', 'b.example', 'c.example'];
const URLS = HOSTS.flatMap((host) => Array.from({ length: 15 }, (_, i) => `http://${host}/p${i}`));

beforeAll(async () => {
  db = await testDatabase('rebuild_spill');
});
afterAll(async () => {
  await db.cleanup();
  await t.cleanup();
});

describe('rebuildFrontier with spilled URLs', () => {
  it('keeps spilled URLs in PostgreSQL and refills them after the rebuild: every URL fetched once', async () => {
    const bloom = await createBloomFilter(t.redis, { prefix: namespace, capacity: 10_000, errorRate: 0.01, shards: 1 }, 'lua');
    const discovery = new Discovery({
      seen: new SeenSet(bloom, db.db),
      db: db.db,
      frontier,
      counters: new Counters(t.redis, namespace, 60_000),
      logger: silentLogger,
      limits: () => ({ maxUrlsPerHost: 0, maxQueryVariants: 0, maxDateVariants: 0 }),
    });
    await discovery.add(URLS.map((url) => ({ url, hash: fingerprint(url), host: new URL(url).host, depth: 1, hops: 0, flags: 0, priority: 0.5, from: null })));
    const before = await frontier.stats();
    expect(before.spilled).toBeGreaterThan(20);
    expect(before.queued + before.spilled).toBe(URLS.length);

    // Redis loses the crawl.
    await deleteByPrefix(t.redis, namespace);
    let settings = 0;
    const report = await rebuildFrontier({
      redis: t.redis,
      namespace,
      db: db.db,
      frontier,
      bloom,
      policyStore: new PolicyStore(t.redis, namespace),
      config: loadConfig({ env: { TRAWL_NAMESPACE: 't_rebuild_spill', TRAWL_SCOPE: 'any' } }),
      recordSettings: async () => void (settings += 1),
      markLive: () => frontier.markLive(),
      restorePauses: async () => 0,
      restoreRenderOverrides: async () => 0,
      settingsPresent: async () => settings > 0,
      fetchHoldMs: 1000,
      clock,
      logger: silentLogger,
    });
    expect(report.rows).toBe(URLS.length);
    const after = await frontier.stats();
    expect(after).toMatchObject({ queued: before.queued, spilled: before.spilled });
    expect(report.queued).toBe(before.queued);

    // Fetch everything: refills bring the spilled URLs back as their hosts run low.
    clock.advance(60_000);
    const refill = new FrontierRefill({ db: db.db, frontier, logger: silentLogger });
    const fetched: string[] = [];
    for (let round = 0; round < 100; round += 1) {
      for (const p of [0, 1]) {
        await refill.run(p);
        for (const lease of (await frontier.claim(p, 100)).leases) {
          fetched.push(lease.url);
          await frontier.release({ partition: p, host: lease.host, leaseId: lease.id, token: 'attempt' }, clock.now());
          await frontier.ack(p, [lease.id]);
        }
      }
      const stats = await frontier.stats();
      if (stats.queued + stats.spilled + stats.leased === 0) break;
    }
    expect(fetched.sort()).toEqual([...URLS].sort());
    const { rows } = await db.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${db.schema}".urls WHERE spill_band IS NOT NULL`);
    expect(rows[0]?.n).toBe('0');
  });
});
