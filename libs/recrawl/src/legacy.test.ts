import { describe, expect, it } from 'vitest';
import { nextCrawl } from './legacy.js';
import { DEFAULT_RECRAWL } from './policy.js';

const T0 = 1_700_000_000_000;
const mid = () => 0.5;

describe('nextCrawl (callers that store only the hash and the estimate)', () => {
  it('schedules a first fetch at the initial interval and records the change', () => {
    expect(nextCrawl(null, 'a', T0, DEFAULT_RECRAWL, mid)).toEqual({ changed: true, changeFrequencyS: null, lastChangedAt: T0, nextCrawlAt: T0 + 86_400_000 });
  });

  it('tells changed from unchanged by the hash and keeps the last change time', () => {
    const previous = { contentHash: 'a', changeFrequencyS: null, lastChangedAt: T0 - 5 };
    expect(nextCrawl(previous, 'a', T0, DEFAULT_RECRAWL, mid)).toMatchObject({ changed: false, lastChangedAt: T0 - 5 });
    expect(nextCrawl(previous, 'b', T0, DEFAULT_RECRAWL, mid)).toMatchObject({ changed: true, lastChangedAt: T0 });
  });

  it('uses the statistics when the caller has them', () => {
    const previous = { contentHash: 'a', changeFrequencyS: 7_200, lastChangedAt: T0 - 3_600_000, visits: 10, changes: 5, changedS: 18_000, unchangedS: 18_000, checkedAt: T0 - 3_600_000, intervalS: 3_600, failures: 0 };
    const decision = nextCrawl(previous, 'b', T0, DEFAULT_RECRAWL, mid);
    expect(decision.changeFrequencyS).toBeGreaterThan(3_600);
    expect(decision.changeFrequencyS).toBeLessThan(7_200);
    expect(decision.nextCrawlAt).toBe(T0 + 3_600_000);
  });
});
