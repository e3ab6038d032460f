import { systemClock } from '@trawl/core';
import { testRedis } from '@trawl/redis/testing';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, describe, expect, it } from 'vitest';
import { workerAssignments } from './membership.js';
import { quietKey, waitForQuietWorkers, WorkerMembership, workerStatus } from './workers.js';

const all = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('workerAssignments', () => {
  it.each([
    { workers: 1, partitions: 1 },
    { workers: 3, partitions: 1 },
    { workers: 2, partitions: 8 },
    { workers: 3, partitions: 4 },
    { workers: 3, partitions: 12 },
    { workers: 5, partitions: 16 },
    { workers: 16, partitions: 4 },
    { workers: 5, partitions: 2 },
  ])('$workers workers, $partitions partitions: every partition consumed, every worker busy, the load even', ({ workers, partitions }) => {
    const replicas = Math.max(1, Math.ceil(workers / partitions));
    // Member ids as workers make them (random), many draws: an even split must not be luck.
    for (let draw = 0; draw < 25; draw += 1) {
      const members = all(workers).map((i) => `worker:${draw}:${i}:${((draw * 7919 + i * 104_729) % 65_536).toString(16)}`);
      const assigned = workerAssignments(members, partitions);
      const consumers = all(partitions).map((p) => members.filter((m) => assigned.get(m)?.includes(p)).length);
      expect(consumers.every((n) => n === replicas)).toBe(true);
      const loads = [...assigned.values()].map((ps) => ps.length);
      expect(Math.max(...loads)).toBe(Math.ceil((partitions * replicas) / workers));
      expect(Math.min(...loads)).toBe(Math.floor((partitions * replicas) / workers));
    }
  });

  it('the same answer whatever order the members are listed in', () => {
    const members = ['d', 'a', 'c', 'b', 'e'];
    const one = workerAssignments(members, 16);
    const other = workerAssignments([...members].reverse(), 16);
    for (const m of members) expect(other.get(m)).toEqual(one.get(m));
  });

  it('a joining or leaving worker moves only some partitions (domain affinity)', () => {
    const before = workerAssignments(['a', 'b', 'c', 'd'], 64);
    const after = workerAssignments(['a', 'b', 'c', 'd', 'e'], 64);
    let lost = 0;
    for (const m of ['a', 'b', 'c', 'd']) lost += (before.get(m) ?? []).filter((p) => !after.get(m)?.includes(p)).length;
    // A fifth worker takes its fifth (12 or 13) and some move between the others to even the load
    // (about half as many again): well under a third of the 64 move, the rest stay.
    expect(after.get('e')?.length).toBeGreaterThanOrEqual(12);
    expect(lost).toBeLessThanOrEqual(2 * 13);
    const gone = workerAssignments(['a', 'b', 'c'], 64);
    let kept = 0;
    for (const m of ['a', 'b', 'c']) kept += (before.get(m) ?? []).filter((p) => gone.get(m)?.includes(p)).length;
    // The three that stay had 48 between them and keep nearly all; d's 16 are shared out.
    expect(kept).toBeGreaterThanOrEqual(48 - 8);
  });
});

describe('WorkerMembership', () => {
  const t = testRedis('workers');
  afterAll(() => t.cleanup());

  it('splits the partitions between live workers, and a dead one\'s move to the others within its heartbeat TTL', async () => {
    const namespace = `${t.prefix}:a`;
    const seen: Record<string, number[]> = {};
    const freed: string[] = [];
    const member = (id: string) =>
      new WorkerMembership(
        t.redis,
        { namespace, partitions: 8, memberId: id, heartbeatTtlMs: 600 },
        systemClock,
        silentLogger,
        (ps) => {
          seen[id] = ps;
        },
        async (lapsed) => (freed.push(`${lapsed} by ${id}`), 0),
      );
    const a = member('a');
    const b = member('b');
    await a.start();
    expect(a.partitions).toEqual(all(8));
    await b.start();
    await new Promise((r) => setTimeout(r, 500));
    expect([...(seen.a ?? []), ...(seen.b ?? [])].sort((x, y) => x - y)).toEqual(all(8));
    expect((seen.a ?? []).filter((p) => seen.b?.includes(p))).toEqual([]);
    expect((await workerStatus(t.redis, namespace, systemClock)).map((w) => w.member)).toEqual(['a', 'b']);

    // b dies: no leave, no heartbeat.
    void (b as unknown as { rounds: { stop(): Promise<void> } }).rounds.stop();
    const died = Date.now();
    while ((seen.a ?? []).length < 8) {
      if (Date.now() - died > 3000) throw new Error('a never took b\'s partitions');
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(Date.now() - died).toBeLessThan(600 + 400);
    // And a freed what b held at the gate, once.
    await new Promise((r) => setTimeout(r, 500));
    expect(freed).toEqual(['b by a']);
    expect((await workerStatus(t.redis, namespace, systemClock)).map((w) => w.member)).toEqual(['a']);
    await a.stop();
    expect(await workerStatus(t.redis, namespace, systemClock)).toEqual([]);
    // A worker that leaves (SIGTERM, after draining) is not lapsed: nothing of its is freed.
    expect(freed).toEqual(['b by a']);
  });
});

describe('quieting down when Redis loses the crawl', () => {
  const t = testRedis('quiet');
  afterAll(() => t.cleanup());

  it('a worker that sees the loss on a heartbeat aborts its fetches, then says it is quiet on every heartbeat until the crawl is back', async () => {
    const namespace = `${t.prefix}:a`;
    let intact = true;
    let quiesced = 0;
    let inFlight = true;
    const membership = new WorkerMembership(
      t.redis,
      { namespace, partitions: 1, memberId: 'w1', heartbeatTtlMs: 600 },
      systemClock,
      silentLogger,
      () => undefined,
      undefined,
      {
        intact: async () => intact,
        quiesce: async () => {
          quiesced += 1;
          // The first try gives up waiting: its fetches have not ended yet.
          const quiet = !inFlight;
          inFlight = false;
          return quiet;
        },
      },
    );
    await membership.tick();
    expect(quiesced).toBe(0);
    intact = false;
    await membership.tick();
    expect(quiesced).toBe(1);
    expect(await t.redis.hkeys(quietKey(namespace))).toEqual([]);
    await membership.tick();
    expect(quiesced).toBe(2);
    expect(await t.redis.hkeys(quietKey(namespace))).toEqual(['w1']);
    intact = true;
    await membership.tick();
    expect(quiesced).toBe(2);
  });

  it('the rebuild waits for every live worker to say it is quiet, and no longer than the longest fetch', async () => {
    const namespace = `${t.prefix}:b`;
    const live = async (...ids: string[]) => {
      for (const id of ids) await t.redis.zadd(`${namespace}:members:worker`, Date.now() + 60_000, id);
    };
    await live('w1', 'w2');
    await t.redis.hset(quietKey(namespace), 'w1', '1');
    const waiting = waitForQuietWorkers(t.redis, namespace, { heartbeatTtlMs: 50, maxWaitMs: 5000, clock: systemClock, pollMs: 20 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await t.redis.hset(quietKey(namespace), 'w2', '1');
    const answer = await waiting;
    expect(answer).toMatchObject({ quiet: true, workers: 2 });
    expect(answer.waitedMs).toBeGreaterThanOrEqual(250);
    expect(answer.waitedMs).toBeLessThan(2000);

    // One that never says so: the wait runs out.
    await live('w3');
    const given = await waitForQuietWorkers(t.redis, namespace, { heartbeatTtlMs: 50, maxWaitMs: 400, clock: systemClock, pollMs: 20 });
    expect(given).toMatchObject({ quiet: false, workers: 3 });
    expect(given.waitedMs).toBeGreaterThanOrEqual(400);

    // No live worker at all: quiet after one heartbeat TTL.
    const empty = await waitForQuietWorkers(t.redis, `${namespace}:none`, { heartbeatTtlMs: 50, maxWaitMs: 5000, clock: systemClock });
    expect(empty).toMatchObject({ quiet: true, workers: 0 });
  });
});
