import { ManualClock } from '@trawl/core';
import { describe, expect, it } from 'vitest';
import { RecentBodies } from './bodies.js';

const body = (n: number, fill = 1): Buffer => Buffer.alloc(n, fill);

describe('RecentBodies', () => {
  it('gives a body back once, then forgets it', () => {
    const bodies = new RecentBodies(100);
    bodies.put('a', body(10));
    expect(bodies.take('a')?.length).toBe(10);
    expect(bodies.take('a')).toBeUndefined();
  });

  it('when full, keeps the oldest bodies (the next to be taken) and refuses new ones', () => {
    const bodies = new RecentBodies(30, new ManualClock(0));
    for (const key of ['a', 'b', 'c', 'd']) bodies.put(key, body(10));
    expect(bodies.take('d')).toBeUndefined();
    expect(bodies.take('a')?.length).toBe(10);
    // Room again: the next body fits, and the others are still there.
    bodies.put('e', body(10));
    expect(['b', 'c', 'e'].map((key) => bodies.take(key)?.length)).toEqual([10, 10, 10]);
  });

  it('still hits on a backlog larger than its cap, for the share of it that fits, when pages are taken in the order they came', () => {
    const bodies = new RecentBodies(50 * 10, new ManualClock(0));
    let hits = 0;
    // 1,000 pages handed off, each taken 150 pages later: the backlog is 3 times the cap.
    // Dropping the oldest body to make room would miss on every one of them.
    for (let i = 0; i < 1000; i++) {
      bodies.put(`k${i}`, body(10));
      if (i >= 150 && bodies.take(`k${i - 150}`)) hits++;
    }
    expect(hits).toBeGreaterThanOrEqual(Math.floor(850 / 3));
  });

  it('makes room by dropping bodies nobody took for the unclaimed time', () => {
    const clock = new ManualClock(0);
    const bodies = new RecentBodies(20, clock, 1000);
    bodies.put('orphan', body(10));
    bodies.put('waiting', body(10));
    clock.advance(999);
    bodies.put('new', body(10));
    expect(bodies.take('new')).toBeUndefined();
    clock.advance(1);
    bodies.put('new', body(10));
    expect(bodies.take('orphan')).toBeUndefined();
    expect(bodies.take('new')?.length).toBe(10);
    expect(bodies.take('waiting')?.length).toBe(10);
  });

  it('never keeps a body larger than the cap, and keeps one copy per key', () => {
    const bodies = new RecentBodies(10);
    bodies.put('big', body(11));
    expect(bodies.take('big')).toBeUndefined();
    bodies.put('a', body(5, 1));
    bodies.put('a', body(5, 2));
    expect(bodies.take('a')?.[0]).toBe(1);
  });
});
