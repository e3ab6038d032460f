import { systemClock } from '@trawl/core';
import { testRedis } from '@trawl/redis/testing';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, describe, expect, it } from 'vitest';
import type { Dispatcher } from './dispatcher.js';
import { preferredOwners } from './membership.js';
import { PartitionOwnership } from './ownership.js';
import { rebuildKey } from './rebuild.js';
import { REBUILD_STALLED_MS, Scheduler, type SchedulerDeps, schedulerStatus } from './scheduler.js';

/**
 * Partition ownership among schedulers, against a real Redis: every partition is dispatched by
 * exactly one live scheduler, a stopped one hands over at once, and a dead one's partitions are
 * taken within the lease.
 */
const t = testRedis('sched');
afterAll(() => t.cleanup());
let n = 0;

/** A dispatcher that only notes which partitions it runs. */
function fakeDispatcher(): Dispatcher & { runningSet: Set<number> } {
  const runningSet = new Set<number>();
  return {
    runningSet,
    startPartition: (p: number) => void runningSet.add(p),
    stopPartition: async (p: number) => void runningSet.delete(p),
    stop: async () => runningSet.clear(),
  } as unknown as Dispatcher & { runningSet: Set<number> };
}

function scheduler(namespace: string, member: string, partitions: number, leaseMs: number, repairs: number[] = [], extra: Partial<SchedulerDeps> = {}) {
  const dispatcher = fakeDispatcher();
  const s = new Scheduler(
    {
      redis: t.redis,
      namespace,
      partitions,
      dispatcher,
      discovery: { repair: async () => (repairs.push(Date.now()), 0) },
      clock: systemClock,
      logger: silentLogger,
      ...extra,
    },
    { memberId: member, leaseMs, repairEveryMs: 50, repairOlderThanMs: 1000 },
  );
  return { s, dispatcher };
}

const until = async (check: () => boolean | Promise<boolean>, timeoutMs: number, what: string) => {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('Scheduler', () => {
  it('spreads partitions over live schedulers, each owned by exactly one, and dispatches only its own', async () => {
    const ns = `${t.prefix}:${(n += 1)}`;
    const a = scheduler(ns, 'a', 8, 600);
    const b = scheduler(ns, 'b', 8, 600);
    await a.s.start();
    await b.s.start();
    try {
      // b joined after a took everything; the ring's preferences move b's share over.
      const want = preferredOwners(['a', 'b'], 8);
      await until(() => want.every((m, p) => (m === 'a' ? a : b).s.partitions.includes(p)), 5000, 'the ring\'s split');
      expect([...a.s.partitions, ...b.s.partitions].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(a.s.partitions.filter((p) => b.s.partitions.includes(p))).toEqual([]);
      expect([...a.dispatcher.runningSet].sort()).toEqual(a.s.partitions);
      expect([...b.dispatcher.runningSet].sort()).toEqual(b.s.partitions);
      const ownership = new PartitionOwnership(t.redis, ns, '', 1);
      for (let p = 0; p < 8; p += 1) expect(await ownership.owner(p)).toBe(want[p]);
      const status = await schedulerStatus(t.redis, ns, 8, systemClock);
      expect(status.map((s) => s.member).sort()).toEqual(['a', 'b']);
    } finally {
      await a.s.stop();
      await b.s.stop();
    }
  });

  it('a scheduler that stops hands its partitions over at once', async () => {
    const ns = `${t.prefix}:${(n += 1)}`;
    const a = scheduler(ns, 'a', 4, 900);
    const b = scheduler(ns, 'b', 4, 900);
    await a.s.start();
    await b.s.start();
    await until(() => a.s.partitions.length > 0 && b.s.partitions.length > 0, 5000, 'both to own partitions');
    const started = Date.now();
    await a.s.stop();
    await until(() => b.s.partitions.length === 4, 3000, 'b to own every partition');
    // Released keys are free at once: b takes them on its next round (a third of the lease).
    expect(Date.now() - started).toBeLessThan(900);
    await b.s.stop();
  });

  it('a dead scheduler\'s partitions are taken within the lease, never while it still holds them', async () => {
    const ns = `${t.prefix}:${(n += 1)}`;
    const lease = 600;
    const a = scheduler(ns, 'a', 4, lease);
    await a.s.start();
    expect(a.s.partitions).toEqual([0, 1, 2, 3]);
    // "Kill" a: its loop stops renewing, nothing is released.
    void (a.s as unknown as { rounds: { stop(): Promise<void> } }).rounds.stop();
    const killedAt = Date.now();
    const b = scheduler(ns, 'b', 4, lease);
    await b.s.start();
    expect(b.s.partitions).toEqual([]); // a's leases have not run out yet
    await until(() => b.s.partitions.length === 4, 5000, 'b to take over');
    const tookMs = Date.now() - killedAt;
    expect(tookMs).toBeGreaterThanOrEqual(lease - 50);
    expect(tookMs).toBeLessThan(lease + lease); // the lease, plus at most a round or two
    await b.s.stop();
  });

  it('only the owner of partition 0 runs the repair sweep', async () => {
    const ns = `${t.prefix}:${(n += 1)}`;
    const repairsA: number[] = [];
    const repairsB: number[] = [];
    const a = scheduler(ns, 'a', 2, 300, repairsA);
    const b = scheduler(ns, 'b', 2, 300, repairsB);
    await a.s.start();
    await b.s.start();
    await new Promise((r) => setTimeout(r, 1200));
    const owner0 = a.s.partitions.includes(0) ? repairsA : repairsB;
    const other = owner0 === repairsA ? repairsB : repairsA;
    await a.s.stop();
    await b.s.stop();
    expect(owner0.length).toBeGreaterThan(0);
    // The other one may have owned partition 0 for its first round only.
    expect(other.length).toBeLessThanOrEqual(1);
  });

  it('dispatches nothing while Redis has lost the crawl, says what to run once, and resumes after the rebuild', async () => {
    const ns = `${t.prefix}:${(n += 1)}`;
    let intact = true;
    const errors: string[] = [];
    let restored = 0;
    const logger = { ...silentLogger, error: (_o: unknown, message?: string) => void errors.push(String(message)), child: () => logger } as unknown as typeof silentLogger;
    const a = scheduler(ns, 'a', 2, 300, [], {
      logger,
      guard: async () => (intact ? { ok: true } : { ok: false, message: 'run trawl frontier rebuild --namespace x' }),
      onRestored: async () => void (restored += 1),
    });
    await a.s.start();
    await until(() => a.s.partitions.length === 2, 3000, 'a to own both partitions');
    intact = false;
    await until(() => a.s.partitions.length === 0, 3000, 'dispatch to stop');
    expect(a.dispatcher.runningSet.size).toBe(0);
    expect(a.s.waitingForRebuild).toBe(true);
    await new Promise((r) => setTimeout(r, 400));
    expect(a.s.partitions).toEqual([]);
    expect(errors).toEqual(['run trawl frontier rebuild --namespace x']);
    intact = true;
    await until(() => a.s.partitions.length === 2, 3000, 'dispatch to resume');
    expect(restored).toBe(1);
    expect([...a.dispatcher.runningSet].sort()).toEqual([0, 1]);
    await a.s.stop();
  });

  it('TRAWL_AUTO_REBUILD: runs the rebuild itself when Redis has lost the crawl, once at a time, again after a failure, then resumes', async () => {
    const ns = `${t.prefix}:${(n += 1)}`;
    let intact = true;
    let rebuilds = 0;
    let running = 0;
    let overlapped = false;
    const a = scheduler(ns, 'a', 2, 300, [], {
      guard: async () => (intact ? { ok: true } : { ok: false, message: 'lost' }),
      rebuild: async () => {
        rebuilds += 1;
        running += 1;
        if (running > 1) overlapped = true;
        // Slower than a round: the rounds go on meanwhile, and start no second rebuild.
        await new Promise((r) => setTimeout(r, 350));
        running -= 1;
        if (rebuilds === 1) throw new Error('PostgreSQL went away');
        intact = true;
      },
    });
    await a.s.start();
    await until(() => a.s.partitions.length === 2, 3000, 'a to own both partitions');
    intact = false;
    await until(() => a.s.partitions.length === 0, 3000, 'dispatch to stop');
    await until(() => intact, 5000, 'the second rebuild to restore the data');
    await until(() => a.s.partitions.length === 2, 3000, 'dispatch to resume');
    expect(rebuilds).toBe(2);
    expect(overlapped).toBe(false);
    await a.s.stop();
  });

  it('TRAWL_AUTO_REBUILD: resumes a rebuild that handed the crawl back and stopped mid-scan, while dispatch goes on', async () => {
    const ns = `${t.prefix}:${(n += 1)}`;
    let rebuilds = 0;
    const a = scheduler(ns, 'a', 2, 300, [], {
      guard: async () => ({ ok: true }),
      rebuild: async () => {
        rebuilds += 1;
        await t.redis.del(rebuildKey(ns));
      },
    });
    await a.s.start();
    await until(() => a.s.partitions.length === 2, 3000, 'a to own both partitions');
    // A scan that is still moving is left alone.
    await t.redis.hset(rebuildKey(ns), 'handedBack', '1', 'beat', String(Date.now()));
    await new Promise((r) => setTimeout(r, 400));
    expect(rebuilds).toBe(0);
    // One that stopped moving (its process died) is resumed, once.
    await t.redis.hset(rebuildKey(ns), 'beat', String(Date.now() - REBUILD_STALLED_MS - 1));
    await until(() => rebuilds === 1, 3000, 'the stalled rebuild to be resumed');
    await new Promise((r) => setTimeout(r, 300));
    expect(rebuilds).toBe(1);
    expect(a.s.partitions).toEqual([0, 1]);
    await a.s.stop();
  });
});
