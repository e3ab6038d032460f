import { describe, expect, it } from 'vitest';
import { DEFAULT_RECRAWL, nextCrawl } from './index.js';

const H = 3_600_000;
const mid = () => 0.5; // no jitter

describe('nextCrawl', () => {
  it.each([
    ['first fetch: initial interval', null, 'a', { changed: true, changeFrequencyS: 86_400, next: 24 * H }],
    ['unchanged: interval kept', { contentHash: 'a', changeFrequencyS: 7_200, lastChangedAt: 0 }, 'a', { changed: false, changeFrequencyS: 7_200, next: 2 * H }],
    ['changed after 10h: EMA moves towards 10h', { contentHash: 'a', changeFrequencyS: 86_400, lastChangedAt: 0 }, 'b', { changed: true, changeFrequencyS: Math.round(0.3 * 36_000 + 0.7 * 86_400), next: Math.round(0.3 * 36_000 + 0.7 * 86_400) * 1000 }],
    ['clamped to the minimum', { contentHash: 'a', changeFrequencyS: 60, lastChangedAt: 0 }, 'a', { changed: false, changeFrequencyS: 60, next: 1 * H }],
    ['clamped to the maximum', { contentHash: 'a', changeFrequencyS: 99_999_999, lastChangedAt: 0 }, 'a', { changed: false, changeFrequencyS: 99_999_999, next: 2_592_000_000 }],
  ])('%s', (_name, previous, hash, expected) => {
    const now = 10 * H;
    const decision = nextCrawl(previous, hash, now, DEFAULT_RECRAWL, mid);
    expect(decision.changed).toBe(expected.changed);
    expect(decision.changeFrequencyS).toBe(expected.changeFrequencyS);
    expect(decision.nextCrawlAt - now).toBe(expected.next);
  });

  it('jitters within ±10%', () => {
    const lo = nextCrawl(null, 'x', 0, DEFAULT_RECRAWL, () => 0).nextCrawlAt;
    const hi = nextCrawl(null, 'x', 0, DEFAULT_RECRAWL, () => 0.999999).nextCrawlAt;
    expect(lo).toBe(0.9 * 24 * H);
    expect(hi).toBeLessThanOrEqual(1.1 * 24 * H);
    expect(hi).toBeGreaterThan(1.09 * 24 * H);
  });

  it('records when the content last changed', () => {
    expect(nextCrawl({ contentHash: 'a', changeFrequencyS: 100, lastChangedAt: 5 }, 'b', 1000, DEFAULT_RECRAWL, mid).lastChangedAt).toBe(1000);
    expect(nextCrawl({ contentHash: 'a', changeFrequencyS: 100, lastChangedAt: 5 }, 'a', 1000, DEFAULT_RECRAWL, mid).lastChangedAt).toBe(5);
  });
});
