import { ManualClock } from '@trawl/core';
import { testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { AddressGate, addressGroupKeys } from './address-gate.js';

/**
 * The address gate against real Redis: the in-flight cap, the interval between starts, the slot
 * of a dead holder lapsing with its hold, and waiting holders handed start times of their own.
 */
const t: TestRedis = testRedis('address-gate');
afterAll(() => t.cleanup());
let clock: ManualClock;
let gate: AddressGate;
let run = 0;
const HOLD = 30_000;
const STEP = 25;
beforeEach(() => {
  run += 1;
  clock = new ManualClock(1_000_000);
  gate = new AddressGate(t.redis, { prefix: `${t.prefix}:${run}`, clock, holdMs: HOLD, stepMs: STEP, graceMs: 2000 });
});

const GROUP = 'ip:203.0.113.7';

describe('acquireAddress', () => {
  it('lets at most maxInFlight requests of a group be in flight; a release frees a slot', async () => {
    const limits = { maxInFlight: 2, minIntervalMs: 0 };
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'ok' });
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'ok' });
    const third = await gate.acquire(GROUP, 'l3', limits);
    expect(third).toEqual({ kind: 'wait', at: clock.now() + STEP });
    // Another group is not affected.
    expect(await gate.acquire('ip:203.0.113.8', 'l4', limits)).toEqual({ kind: 'ok' });

    expect(await gate.release(GROUP, 'l1')).toBe(true);
    // Asking before its reserved time: told the same time again, nothing taken.
    expect(await gate.acquire(GROUP, 'l3', limits)).toEqual(third);
    clock.advance(STEP);
    expect(await gate.acquire(GROUP, 'l3', limits)).toEqual({ kind: 'ok' });
    expect(await t.redis.zcard(addressGroupKeys(`${t.prefix}:${run}`, GROUP).slots)).toBe(2);
  });

  it('starts requests no closer than the interval, and no sooner than the delay a release asked', async () => {
    const limits = { maxInFlight: 10, minIntervalMs: 100 };
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'ok' });
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'wait', at: clock.now() + 100 });
    clock.advance(100);
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'ok' });
    // l2's response ended now; the politeness delay asks for 1.5 s before the next start.
    await gate.release(GROUP, 'l2', clock.now() + 1500);
    expect(await gate.acquire(GROUP, 'l3', limits)).toEqual({ kind: 'wait', at: clock.now() + 1500 });
    // A release never moves the next start backward.
    await gate.release(GROUP, 'l1', clock.now() + 10);
    clock.advance(1499);
    expect((await gate.acquire(GROUP, 'l3', limits)).kind).toBe('wait');
    clock.advance(1);
    expect(await gate.acquire(GROUP, 'l3', limits)).toEqual({ kind: 'ok' });
  });

  it('a probe is granted as any ask, and refused it reserves nothing: the waiting holder keeps its place', async () => {
    const limits = { maxInFlight: 1, minIntervalMs: 0 };
    const keys = addressGroupKeys(`${t.prefix}:${run}`, GROUP);
    expect(await gate.acquire(GROUP, 'borrow:1', limits, { probe: true })).toEqual({ kind: 'ok' });
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'wait', at: clock.now() + STEP });
    await gate.release(GROUP, 'borrow:1', clock.now() + 500);
    expect((await gate.acquire(GROUP, 'borrow:2', limits, { probe: true })).kind).toBe('wait');
    expect(await t.redis.zrange(keys.book, '0', '-1')).toEqual(['l1']);
    clock.advance(500);
    // l1 is waiting with a reservation: a probe does not jump the line, and reserves nothing.
    expect((await gate.acquire(GROUP, 'borrow:3', limits, { probe: true })).kind).toBe('wait');
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'ok' });
    expect(await t.redis.zrange(keys.book, '0', '-1')).toEqual([]);
  });

  it('a dead holder’s slot lapses when its hold ends', async () => {
    const limits = { maxInFlight: 1, minIntervalMs: 0 };
    expect(await gate.acquire(GROUP, 'dead', limits)).toEqual({ kind: 'ok' });
    clock.advance(HOLD - 1);
    const refused = await gate.acquire(GROUP, 'l2', limits);
    if (refused.kind !== 'wait') throw new Error('expected a wait');
    // Reserved a step later, by which time the dead holder's hold has ended.
    clock.set(refused.at);
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'ok' });
    // The dead holder's late release frees nothing of l2's.
    expect(await gate.release(GROUP, 'dead')).toBe(false);
    expect((await gate.acquire(GROUP, 'l3', limits)).kind).toBe('wait');
  });

  it('hands waiting holders start times of their own (no herd), serves them in turn, and newcomers queue behind', async () => {
    const limits = { maxInFlight: 1, minIntervalMs: 200 };
    expect(await gate.acquire(GROUP, 'l0', limits)).toEqual({ kind: 'ok' });
    const waits = [];
    for (let i = 1; i <= 20; i++) waits.push(await gate.acquire(GROUP, `l${i}`, limits));
    const times = waits.map((w) => (w.kind === 'wait' ? w.at : -1));
    expect(new Set(times).size).toBe(20);
    for (let i = 1; i < times.length; i++) expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThanOrEqual(200);

    // The first in line comes back at its time, once l0 has ended.
    await gate.release(GROUP, 'l0');
    clock.set(times[0] as number);
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'ok' });
    // A newcomer now queues after the last reservation, it does not jump the line.
    const late = await gate.acquire(GROUP, 'newcomer', limits);
    expect(late).toEqual({ kind: 'wait', at: (times[19] as number) + 200 });
    // Early, l2 is told its time again.
    clock.set((times[1] as number) - 1);
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'wait', at: times[1] });
    // Its time comes while l1 is still in flight: back of the line, so the group is asked about
    // once a step however many wait.
    clock.set(times[1] as number);
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'wait', at: (times[19] as number) + 400 });
    // l3 comes at its time, l1 has ended: served.
    await gate.release(GROUP, 'l1');
    clock.set(times[2] as number);
    expect(await gate.acquire(GROUP, 'l3', limits)).toEqual({ kind: 'ok' });
  });

  it('spaces waiting jobs by the group\'s last cycle (start to next allowed start) when longer than the step, up to 4 steps', async () => {
    const limits = { maxInFlight: 1, minIntervalMs: 0, stepMs: 150 };
    const t0 = clock.now();
    expect(await gate.acquire(GROUP, 'l0', limits)).toEqual({ kind: 'ok' });
    // The response took 200 ms and asks a 150 ms delay: the group's cycle is 350 ms.
    clock.advance(200);
    await gate.release(GROUP, 'l0', clock.now() + 150);
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'wait', at: t0 + 350 });
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'wait', at: t0 + 700 });
    // A long back-off holds the whole group, but the jobs after it are spaced 4 steps apart at most.
    clock.set(t0 + 350);
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'ok' });
    clock.advance(10);
    await gate.release(GROUP, 'l1', clock.now() + 60_000);
    expect(await gate.acquire(GROUP, 'l3', limits)).toEqual({ kind: 'wait', at: clock.now() + 60_000 });
    expect(await gate.acquire(GROUP, 'l4', limits)).toEqual({ kind: 'wait', at: clock.now() + 60_000 + 600 });
  });

  it('a reservation its holder never claims holds the line only for the grace', async () => {
    const limits = { maxInFlight: 1, minIntervalMs: 0 };
    expect(await gate.acquire(GROUP, 'l0', limits)).toEqual({ kind: 'ok' });
    const gone = await gate.acquire(GROUP, 'gone', limits);
    if (gone.kind !== 'wait') throw new Error('expected a wait');
    await gate.release(GROUP, 'l0');
    // Free, but "gone" is first in line: a newcomer queues behind it.
    clock.set(gone.at + 2000);
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'wait', at: clock.now() });
    // Past the grace the line moves on without it: l2 is served.
    clock.set(gone.at + 2001);
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'ok' });
  });

  it('counts a request already under way when forced, and a repeated ask of a holder is idempotent', async () => {
    const limits = { maxInFlight: 1, minIntervalMs: 0 };
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'ok' });
    expect(await gate.acquire(GROUP, 'l1', limits)).toEqual({ kind: 'ok' });
    expect(await gate.acquire(GROUP, 'under-way', limits, { force: true })).toEqual({ kind: 'ok' });
    await gate.release(GROUP, 'l1');
    expect((await gate.acquire(GROUP, 'l2', limits)).kind).toBe('wait');
    await gate.release(GROUP, 'under-way');
    clock.advance(STEP);
    expect(await gate.acquire(GROUP, 'l2', limits)).toEqual({ kind: 'ok' });
  });

  it('keeps no key of an idle group', async () => {
    const limits = { maxInFlight: 1, minIntervalMs: 50 };
    await gate.acquire(GROUP, 'l1', limits);
    const keys = addressGroupKeys(`${t.prefix}:${run}`, GROUP);
    for (const key of [keys.slots, keys.state]) {
      const ttl = await t.redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(HOLD + 2000 + 50);
    }
  });
});
