import { describe, expect, it } from 'vitest';
import { politeCapacity, RateWindow } from './capacity.js';

describe('politeCapacity', () => {
  it.each([
    ['no hosts with work', [{ delayMs: 1000, backingOff: false }], 0, 0, 0],
    ['an empty sample', [], 10, 0, 0],
    ['ten hosts at 1 s', [{ delayMs: 1000, backingOff: false }], 10, 10, 0],
    ['mixed delays: 1 s and 4 s average 0.625/s', [{ delayMs: 1000, backingOff: false }, { delayMs: 4000, backingOff: true }], 100, 62.5, 50],
    ['a zero delay is ignored (not infinite capacity)', [{ delayMs: 0, backingOff: false }, { delayMs: 500, backingOff: false }], 4, 8, 0],
  ])('%s', (_name, sample, hosts, pagesPerSecond, backingOff) => {
    const estimate = politeCapacity(sample, hosts);
    expect(estimate.pagesPerSecond).toBeCloseTo(pagesPerSecond, 6);
    expect(estimate.hostsBackingOff).toBe(backingOff);
  });
});

describe('RateWindow', () => {
  it('measures the rate over its window and starts over when the counter resets', () => {
    const w = new RateWindow(10_000);
    expect(w.add(0, 100)).toBeNull();
    expect(w.add(5000, 150)).toBe(10);
    expect(w.add(10_000, 300)).toBe(20);
    // The 0 s sample leaves the window once a later one is 10 s old.
    expect(w.add(15_000, 300)).toBe(15);
    expect(w.add(16_000, 5)).toBeNull();
    expect(w.add(17_000, 15)).toBe(10);
  });
});
