import { describe, expect, it } from 'vitest';
import { DEFAULT_RECRAWL } from './policy.js';
import { recrawlPriority } from './priority.js';

const T0 = 1_700_000_000_000;
const H = 3_600_000;
const page = (changeIntervalS: number | null, sinceMs: number | null, failures = 0) => ({ changeIntervalS, checkedAt: sinceMs === null ? null : T0 - sinceMs, failures });

describe('recrawlPriority', () => {
  it.each([
    // 0.75 × (1 − e^(−Δ/μ)) + 0.25 × min(1, Δ / 30 days)
    ['changes hourly, unchecked 1 h', page(3_600, H), 0.75 * (1 - Math.exp(-1)) + 0.25 * (1 / 720)],
    ['changes hourly, unchecked 1 day', page(3_600, 24 * H), 0.75 * (1 - Math.exp(-24)) + 0.25 * (24 / 720)],
    ['changes daily, unchecked 1 h', page(86_400, H), 0.75 * (1 - Math.exp(-1 / 24)) + 0.25 * (1 / 720)],
    ['never seen to change, unchecked 15 days', page(null, 360 * H), 0.25 * 0.5],
    ['never seen to change, unchecked 60 days', page(null, 1_440 * H), 0.25],
    ['no copy held', page(null, null), 1],
    ['no copy held, 2 failures', page(null, null, 2), 0.25],
  ])('%s', (_name, input, expected) => {
    expect(recrawlPriority(input, T0)).toBeCloseTo(expected, 12);
  });

  it('rises with the change rate and with staleness, and stays within 0..1', () => {
    const intervals = [60, 3_600, 86_400, 2_592_000, null];
    const ages = [0, 60_000, H, 24 * H, 720 * H, 10_000 * H];
    for (const age of ages) {
      const byRate = intervals.map((interval) => recrawlPriority(page(interval, age), T0));
      expect(byRate).toEqual([...byRate].sort((a, b) => b - a));
    }
    for (const interval of intervals) {
      const byAge = ages.map((age) => recrawlPriority(page(interval, age), T0));
      expect(byAge).toEqual([...byAge].sort((a, b) => a - b));
      for (const p of byAge) {
        expect(p).toBeGreaterThanOrEqual(0);
        expect(p).toBeLessThanOrEqual(1);
      }
    }
    // A check in the future (clock skew between workers) is treated as just now.
    expect(recrawlPriority(page(3_600, -H), T0, DEFAULT_RECRAWL)).toBe(0);
  });

  it('takes the age weight and maximum interval given', () => {
    expect(recrawlPriority(page(null, 12 * H), T0, { maxIntervalS: 86_400 }, { ageWeight: 1 })).toBeCloseTo(0.5, 12);
  });
});
