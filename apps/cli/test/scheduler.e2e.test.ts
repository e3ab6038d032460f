import { PartitionOwnership } from '@trawl/dispatch';
import { createRedis } from '@trawl/redis';
import { analyzeLog, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropNamespace, type Proc, REDIS_URL, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';

/**
 * trawl as a service: two `trawl scheduler` and two `trawl worker` processes, seeds added with
 * `trawl seed` — no `trawl crawl` anywhere. One scheduler is SIGKILLed mid-crawl; the other takes
 * its partitions within the lease and the crawl completes, judged from the synthetic web's log.
 */
const HOSTS = 30;
const PAGES = 12;
const PARTITIONS = 4;
const LEASE_MS = 1500;
const DELAY = 150;

let web: TestWeb;
const namespace = uniqueNamespace('sched');
const redis = createRedis(REDIS_URL);

beforeAll(async () => {
  web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 3, crossHostLinks: 1, latencyMs: { min: 1, max: 5 }, seed: 11 });
});

afterAll(async () => {
  await web.stop();
  redis.disconnect();
  await dropNamespace(namespace);
});

const env = {
  TRAWL_NAMESPACE: namespace,
  TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
  TRAWL_PARTITIONS: String(PARTITIONS),
  TRAWL_SCHEDULER_LEASE_MS: String(LEASE_MS),
  TRAWL_MIN_DELAY_MS: String(DELAY),
  TRAWL_SCOPE: 'any',
  TRAWL_CONCURRENCY: '16',
  TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
};

async function status(): Promise<{
  frontier: { queued: number; leased: number };
  queues: Record<string, number>;
  schedulers: { member: string; partitions: number[] }[];
  workers: { member: string; partitions: number[] }[];
}> {
  const proc = trawl(['status'], env);
  const { code } = await proc.exited;
  if (code !== 0) throw new Error(`trawl status exited ${code}: ${proc.stderr()}`);
  return JSON.parse(proc.stdout());
}

const alive = (p: Proc) => p.child.exitCode === null && p.child.signalCode === null;

describe('scheduler + workers + seed, no `trawl crawl`', () => {
  it('completes a crawl after a scheduler is SIGKILLed, fetching nothing twice and staying polite', async () => {
    const schedulers = [trawl(['scheduler'], env), trawl(['scheduler'], env)];
    const workers = [trawl(['worker'], env), trawl(['worker'], env)];
    const all = [...schedulers, ...workers];
    try {
      const ownership = new PartitionOwnership(redis, namespace, '', 1);
      const owners = () => Promise.all(Array.from({ length: PARTITIONS }, (_, p) => ownership.owner(p)));
      await waitFor(async () => (await owners()).every((o) => o !== null), 20_000, 'the schedulers to own every partition');

      const seeds = web.rootUrls();
      const seed = trawl(['seed', ...seeds], env);
      const seeded = await seed.exited;
      expect(seeded.code, seed.stderr()).toBe(0);
      const added = JSON.parse(seed.stdout()) as { state: string; enqueued: number; already_seen: number };
      expect(added).toMatchObject({ state: 'done', enqueued: HOSTS, already_seen: 0 });

      const expected = web.groundTruth(seeds, 'any');
      await waitFor(() => web.log.length >= expected.size / 3, 60_000, 'a third of the crawl');

      // Kill a scheduler that owns partitions, mid-crawl.
      const victimMember = (await owners()).find((o) => o !== null) as string;
      const victimPid = Number(victimMember.split(':')[1]);
      const victim = schedulers.find((s) => s.child.pid === victimPid) as Proc;
      const survivor = schedulers.find((s) => s !== victim) as Proc;
      expect(victim, `no scheduler process has pid ${victimPid}`).toBeDefined();
      victim.child.kill('SIGKILL');
      const killedAt = Date.now();
      await waitFor(async () => (await owners()).every((o) => o !== null && o !== victimMember), 20_000, 'the survivor to take every partition');
      const failoverMs = Date.now() - killedAt;
      // Bounded by the ownership lease, plus the survivor's round (a third of it) and some slack.
      expect(failoverMs).toBeLessThan(LEASE_MS * 2 + 1000);
      console.log(`[scheduler failover] all ${PARTITIONS} partitions taken over ${failoverMs} ms after SIGKILL (lease ${LEASE_MS} ms)`);

      // Idle, as scripts judge it from `trawl status`.
      let last: unknown = null;
      await waitFor(
        async () => {
          const s = await status();
          last = { frontier: s.frontier, queues: s.queues, schedulers: s.schedulers, fetched: web.log.length };
          return s.frontier.queued === 0 && s.frontier.leased === 0 && !s.queues.waiting && !s.queues.active && !s.queues.delayed;
        },
        180_000,
        'the crawl to go idle',
      ).catch((error: Error) => {
        throw new Error(`${error.message}; last status: ${JSON.stringify(last)}`);
      });
      const final = await status();
      expect(final.schedulers.flatMap((s) => s.partitions).sort()).toEqual([0, 1, 2, 3]);
      // Both workers are members, and between them consume every partition (domain affinity).
      expect(final.workers).toHaveLength(2);
      expect([...new Set(final.workers.flatMap((w) => w.partitions))].sort()).toEqual([0, 1, 2, 3]);
      expect(alive(survivor)).toBe(true);

      await web.idle();
      const report = analyzeLog(web.log, { minIntervalMs: DELAY, expected });
      expect(report.coverage?.missing).toEqual([]);
      expect(report.duplicates.pages).toEqual([]);
      expect(report.concurrency.violations).toEqual([]);
      expect(report.intervals.violations).toEqual([]);

      // Everyone but the SIGKILLed scheduler stops cleanly on SIGTERM.
      const rest = all.filter((p) => p !== victim);
      for (const p of rest) p.child.kill('SIGTERM');
      for (const p of rest) expect((await p.exited).code, p.stderr()).toBe(0);
    } finally {
      for (const p of all) if (alive(p)) p.child.kill('SIGKILL');
      await Promise.all(all.map((p) => p.exited));
    }
  }, 240_000);
});
