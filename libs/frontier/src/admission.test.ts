import { ManualClock } from '@trawl/core';
import { testRedis, type TestRedis } from '@trawl/redis/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Admission, type AdmissionState, admissionLimits, admissionState } from './admission.js';
import { Frontier, type PushItem } from './frontier.js';

describe('admissionState', () => {
  const limits = admissionLimits(1000);
  it.each<[AdmissionState, number, AdmissionState]>([
    ['admitting', 0, 'admitting'],
    ['admitting', 999, 'admitting'],
    ['admitting', 1000, 'paused'],
    ['admitting', 5000, 'paused'],
    // Hysteresis: between 90 % and the threshold the state stays what it was.
    ['paused', 999, 'paused'],
    ['paused', 900, 'paused'],
    ['paused', 899, 'admitting'],
    ['paused', 0, 'admitting'],
  ])('%s with %i queued → %s', (previous, queued, expected) => {
    expect(admissionState(previous, queued, limits)).toBe(expected);
  });

  it('never pauses with a threshold of 0', () => {
    expect(admissionState('admitting', 1e9, admissionLimits(0))).toBe('admitting');
    expect(admissionState('paused', 1e9, admissionLimits(0))).toBe('admitting');
  });

  it('resumes below 90 % of the threshold', () => {
    expect(admissionLimits(1000)).toEqual({ maxQueued: 1000, resumeBelow: 900 });
    expect(admissionLimits(15)).toEqual({ maxQueued: 15, resumeBelow: 13 });
  });
});

const t: TestRedis = testRedis('frontier_admission');
afterAll(() => t.cleanup());
let clock: ManualClock;
let run = 0;
beforeEach(() => {
  run += 1;
  clock = new ManualClock(1_000_000);
});

const frontierAt = (prefix: string, partitions = 3): Frontier =>
  new Frontier(t.redis, { prefix, partitions, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, clock });
const items = (n: number, from = 0): PushItem[] =>
  Array.from({ length: n }, (_, i) => ({ host: `h${(from + i) % 17}.test`, url: `http://h${(from + i) % 17}.test/${from + i}`, depth: 0, hops: 0, flags: 0, priority: 0.5 }));

describe('Admission', () => {
  it('counts queued URLs over every partition', async () => {
    const frontier = frontierAt(`${t.prefix}:${run}`);
    expect(await frontier.queuedCount()).toBe(0);
    await frontier.push(items(40));
    expect(await frontier.queuedCount()).toBe(40);
    expect((await frontier.stats()).queued).toBe(40);
  });

  it('pauses at the threshold and resumes only below 90 % of it, with the time of each change', async () => {
    const prefix = `${t.prefix}:${run}`;
    const frontier = frontierAt(prefix);
    const admission = new Admission(t.redis, frontier, { prefix, maxQueued: 20, clock });
    expect(await admission.check()).toEqual({ state: 'admitting', queued: 0, since: 1_000_000, maxQueued: 20, resumeBelow: 18 });
    await frontier.push(items(20));
    clock.advance(1000);
    expect(await admission.check()).toMatchObject({ state: 'paused', queued: 20, since: 1_001_000 });
    // Drain to 18 (90 %): still paused.
    for (let p = 0; (await frontier.queuedCount()) > 18; p = (p + 1) % 3) await frontier.claim(p, 1);
    clock.advance(1000);
    expect(await admission.check()).toMatchObject({ state: 'paused', queued: 18, since: 1_001_000 });
    for (let p = 0; (await frontier.queuedCount()) > 17; p = (p + 1) % 3) await frontier.claim(p, 1);
    clock.advance(1000);
    expect(await admission.check()).toMatchObject({ state: 'admitting', queued: 17, since: 1_003_000 });
  });

  it('shares its state between processes (another process sees the pause it did not decide)', async () => {
    const prefix = `${t.prefix}:${run}`;
    const frontier = frontierAt(prefix);
    const scheduler = new Admission(t.redis, frontier, { prefix, maxQueued: 10, clock });
    const dashboard = new Admission(t.redis, frontierAt(prefix), { prefix, maxQueued: 10, clock });
    await frontier.push(items(10));
    expect((await scheduler.check()).state).toBe('paused');
    for (let p = 0; (await frontier.queuedCount()) > 9; p = (p + 1) % 3) await frontier.claim(p, 1);
    // 9 of 10 is above the resume mark: a process that never saw 10 still says paused.
    expect((await dashboard.check()).state).toBe('paused');
  });

  it('a process that does not set the threshold follows the one the schedulers recorded', async () => {
    const prefix = `${t.prefix}:${run}`;
    const frontier = frontierAt(prefix);
    // A dashboard before any scheduler has checked: its own threshold.
    const cli = new Admission(t.redis, frontier, { prefix, maxQueued: 1000, clock });
    expect(await cli.check()).toMatchObject({ state: 'admitting', maxQueued: 1000, resumeBelow: 900 });
    const scheduler = new Admission(t.redis, frontier, { prefix, maxQueued: 10, clock });
    await frontier.push(items(12));
    expect(await scheduler.check({ setsThreshold: true })).toMatchObject({ state: 'paused', maxQueued: 10, resumeBelow: 9 });
    // `trawl seed` run without TRAWL_FRONTIER_MAX_QUEUED (the default is far higher) cannot resume it.
    expect(await cli.check()).toMatchObject({ state: 'paused', queued: 12, maxQueued: 10, resumeBelow: 9 });
    expect(await scheduler.check({ setsThreshold: true })).toMatchObject({ state: 'paused' });
  });

  it('always admits with a threshold of 0', async () => {
    const prefix = `${t.prefix}:${run}`;
    const frontier = frontierAt(prefix);
    await frontier.push(items(50));
    expect(await new Admission(t.redis, frontier, { prefix, maxQueued: 0, clock }).check()).toMatchObject({ state: 'admitting', queued: 50 });
  });
});
