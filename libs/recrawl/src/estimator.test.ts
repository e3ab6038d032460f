import { describe, expect, it } from 'vitest';
import { addVisit, type ChangeStats, changeIntervalS, changeRate, NO_STATS } from './estimator.js';

/** n visits at interval I, the first X of which saw a change, without decay. */
function regular(n: number, changes: number, intervalS: number): ChangeStats {
  let stats = NO_STATS;
  for (let i = 0; i < n; i++) stats = addVisit(stats, i < changes, intervalS, 1);
  return stats;
}

describe('change-rate estimator', () => {
  it.each([
    [10, 0, 3600],
    [10, 3, 3600],
    [10, 10, 3600],
    [50, 20, 60],
    [1, 1, 86_400],
  ])('with regular visits it is Cho & Garcia-Molina’s bias-reduced estimator (n=%i, X=%i, I=%i s)', (n, x, intervalS) => {
    const cho = -Math.log((n - x + 0.5) / (n + 0.5)) / intervalS;
    expect(changeRate(regular(n, x, intervalS))).toBeCloseTo(cho, 12);
  });

  it('stays finite when every visit saw a change, and grows with the evidence', () => {
    const rates = [1, 5, 20, 100].map((n) => changeRate(regular(n, n, 100)));
    for (const rate of rates) expect(Number.isFinite(rate)).toBe(true);
    expect(rates).toEqual([...rates].sort((a, b) => a - b));
    // A page changed at each of 20 visits 100 s apart changes more often than every 100 s.
    expect(changeIntervalS(regular(20, 20, 100))).toBeLessThan(100 / 3);
  });

  it('knows nothing before a change is seen', () => {
    expect(changeIntervalS(NO_STATS)).toBeNull();
    expect(changeIntervalS(regular(30, 0, 60))).toBeNull();
  });

  it('lets old behaviour fade with decay', () => {
    // A page that changed at every hourly visit, then stopped: the estimate grows with each quiet visit.
    let stats = regular(20, 20, 3600);
    let previous = changeIntervalS(stats)!;
    for (let i = 0; i < 40; i++) {
      stats = addVisit(stats, false, 3600, 0.9);
      const estimate = changeIntervalS(stats)!;
      expect(estimate).toBeGreaterThan(previous);
      previous = estimate;
    }
    expect(previous).toBeGreaterThan(20 * 3600);
  });

  it('weighs unchanged time at its real length when intervals differ', () => {
    // Same changed visits; a long quiet stretch means a slower page than a short one.
    const base = addVisit(addVisit(NO_STATS, true, 600, 1), true, 600, 1);
    const shortQuiet = addVisit(base, false, 600, 1);
    const longQuiet = addVisit(base, false, 60_000, 1);
    expect(changeIntervalS(longQuiet)!).toBeGreaterThan(changeIntervalS(shortQuiet)!);
  });
});
