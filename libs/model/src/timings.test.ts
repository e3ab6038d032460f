import { describe, expect, it } from 'vitest';
import { Timings } from './timings.js';

describe('Timings', () => {
  it('tells its listeners every value, clamped at 0, and stops when unsubscribed', () => {
    const timings = new Timings();
    const seen: number[] = [];
    const stop = timings.observe((name, s) => {
      expect(name).toBe('fetchLateness');
      seen.push(s);
    });
    timings.record('fetchLateness', 0.5);
    timings.record('fetchLateness', -0.2);
    timings.record('fetchLateness', Number.NaN);
    stop();
    timings.record('fetchLateness', 3);
    expect(seen).toEqual([0.5, 0]);
  });

  it('gives quantiles of what it saw, from a bounded sample once there are many', () => {
    const timings = new Timings(() => 0.999_999);
    expect(timings.quantiles('fetchLateness', [0.5])).toBeNull();
    for (let i = 1; i <= 100; i += 1) timings.record('fetchLateness', i / 1000);
    expect(timings.quantiles('fetchLateness', [0.5, 0.99, 1])).toEqual({ count: 100, values: [0.05, 0.099, 0.1] });
    // Past the sample's size, values still count, and replace kept ones at random.
    let seed = 1;
    const uniform = new Timings(() => ((seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647));
    for (let i = 0; i < 20_000; i += 1) uniform.record('fetchLateness', i % 1000);
    const q = uniform.quantiles('fetchLateness', [0.5]);
    expect(q?.count).toBe(20_000);
    expect(q?.values[0]).toBeGreaterThan(420);
    expect(q?.values[0]).toBeLessThan(580);
  });
});
