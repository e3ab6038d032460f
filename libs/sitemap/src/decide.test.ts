import { describe, expect, it } from 'vitest';
import { sitemapDecision } from './decide.js';

const NOW = Date.UTC(2024, 4, 7, 12);
const H = 3_600_000;

describe('sitemapDecision', () => {
  it.each([
    ['never crawled', NOW - H, null, 'unknown-url'],
    ['never crawled, no lastmod', null, null, 'unknown-url'],
    ['changed after the last crawl', NOW - H, NOW - 2 * H, 'due-now-high-priority'],
    ['changed before the last crawl', NOW - 3 * H, NOW - 2 * H, 'nothing'],
    ['changed at the moment of the last crawl', NOW - 2 * H, NOW - 2 * H, 'nothing'],
    ['no lastmod', null, NOW - 2 * H, 'nothing'],
    ['lastmod a little ahead of our clock', NOW + H, NOW - 2 * H, 'due-now-high-priority'],
    ['lastmod days in the future: not believed', NOW + 48 * H, NOW - 2 * H, 'nothing'],
  ] as const)('%s', (_name, lastmod, lastCrawledAt, expected) => {
    expect(sitemapDecision(lastmod, lastCrawledAt, NOW)).toBe(expected);
  });

  it('takes the future tolerance given', () => {
    expect(sitemapDecision(NOW + H, NOW - H, NOW, { futureToleranceMs: 0 })).toBe('nothing');
  });
});
