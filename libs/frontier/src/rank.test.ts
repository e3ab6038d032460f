import { describe, expect, it } from 'vitest';
import { AUTHORITY_SATURATION, authorityOf, claimRank, hostScore, MAX_RANKED_HOSTS, rankedHosts } from './rank.js';

describe('authorityOf', () => {
  it.each([
    [0, 0],
    [-3, 0],
    [Number.NaN, 0],
    [1, Math.log2(2) / Math.log2(1 + AUTHORITY_SATURATION)],
    [31, 5 / Math.log2(1 + AUTHORITY_SATURATION)],
    [AUTHORITY_SATURATION, 1],
    [AUTHORITY_SATURATION * 10, 1],
  ])('%d linking hosts give %f', (links, expected) => {
    expect(authorityOf(links)).toBeCloseTo(expected, 12);
  });

  it('grows with each linking host, the first ones most', () => {
    expect(authorityOf(2) - authorityOf(1)).toBeGreaterThan(authorityOf(101) - authorityOf(100));
    expect(authorityOf(101)).toBeGreaterThan(authorityOf(100));
  });
});

describe('hostScore', () => {
  const even = { authority: 1, seed: 1 };
  it.each([
    ['no links, no seed', { inLinkHosts: 0, seedPriority: 0 }, even, 0],
    ['a seed of priority 1 alone', { inLinkHosts: 0, seedPriority: 1 }, even, 0.5],
    ['saturated authority and a seed of 1', { inLinkHosts: AUTHORITY_SATURATION, seedPriority: 1 }, even, 1],
    ['seed weight only', { inLinkHosts: AUTHORITY_SATURATION, seedPriority: 0.3 }, { authority: 0, seed: 2 }, 0.3],
    ['authority weight only', { inLinkHosts: AUTHORITY_SATURATION, seedPriority: 0.3 }, { authority: 5, seed: 0 }, 1],
    ['weights that sum to nothing', { inLinkHosts: 10, seedPriority: 1 }, { authority: 0, seed: 0 }, 0],
    ['a seed priority out of range is clamped', { inLinkHosts: 0, seedPriority: 7 }, { authority: 0, seed: 1 }, 1],
  ])('%s', (_name, parts, weights, expected) => {
    expect(hostScore(parts, weights)).toBeCloseTo(expected, 12);
  });
});

describe('claimRank', () => {
  const now = 100_000;
  it('moves a due host ahead by score × lead', () => {
    expect(claimRank(now - 1000, now, 0.5, 10_000)).toBe(now - 6000);
    expect(claimRank(now, now, 1, 10_000)).toBe(now - 10_000);
  });

  it('ranks a host not yet due at its due time, behind every due host whatever its score', () => {
    expect(claimRank(now + 5, now, 1, 10_000)).toBe(now + 5);
    expect(claimRank(now + 5, now, 1, 10_000)).toBeGreaterThan(claimRank(now, now, 0, 10_000));
  });

  it('lets waiting beat score: a host of score 0 waiting longer than the lead past due goes before a host of score 1 just due', () => {
    const lead = 10_000;
    expect(claimRank(now - lead + 1, now, 0, lead)).toBeGreaterThan(claimRank(now, now, 1, lead));
    expect(claimRank(now - lead - 1, now, 0, lead)).toBeLessThan(claimRank(now, now, 1, lead));
  });

  it('is due order when the lead is 0', () => {
    expect(claimRank(now - 2, now, 1, 0)).toBeLessThan(claimRank(now - 1, now, 0, 0));
  });
});

describe('rankedHosts', () => {
  it.each([
    [64, 4, 256],
    [2, 8, 16],
    [10, 0, 10],
    [256, 16, MAX_RANKED_HOSTS],
    [5000, 4, 5000],
  ])('a claim of %d with window %d looks at %d hosts', (limit, window, expected) => {
    expect(rankedHosts(limit, window)).toBe(expected);
  });
});
