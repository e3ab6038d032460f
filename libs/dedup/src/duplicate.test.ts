import { describe, expect, it } from 'vitest';
import { classifyDuplicate, duplicateHandling, type NearCandidate } from './duplicate.js';

const hash = (n: number): Buffer => Buffer.alloc(16, n);
const SELF = hash(1);
const FP = 0x0f0f0f0f0f0f0f0fn;
const candidate = (n: number, flips: number, indexedAt = 1000): NearCandidate => {
  let simhash = FP;
  for (let bit = 0; bit < flips; bit++) simhash ^= 1n << BigInt(bit * 7);
  return { urlHash: hash(n), simhash, indexedAt };
};

describe('classifyDuplicate', () => {
  it.each([
    ['no match', null, [], null],
    ['an identical body elsewhere → exact', hash(9), [candidate(2, 1)], { kind: 'exact', of: hash(9), distance: 0 }],
    ['our own earlier body (a re-crawl) is not a duplicate', SELF, [], null],
    ['nearest within the distance → near', null, [candidate(2, 3), candidate(3, 1)], { kind: 'near', of: hash(3), distance: 1 }],
    ['band match beyond the distance is ignored', null, [candidate(2, 4)], null],
    ['our own fingerprint is skipped', null, [candidate(1, 0), candidate(4, 2)], { kind: 'near', of: hash(4), distance: 2 }],
    ['tie on distance: earliest indexed wins', null, [candidate(5, 2, 2000), candidate(6, 2, 1000)], { kind: 'near', of: hash(6), distance: 2 }],
    ['tie on distance and time: lowest url_hash wins', null, [candidate(8, 2), candidate(7, 2)], { kind: 'near', of: hash(7), distance: 2 }],
    ['an exact match beats a near one', hash(9), [candidate(3, 0)], { kind: 'exact', of: hash(9), distance: 0 }],
  ] as const)('%s', (_name, exactOf, candidates, expected) => {
    expect(classifyDuplicate({ urlHash: SELF, simhash: FP, exactOf, candidates, maxDistance: 3 })).toEqual(expected);
  });

  it('distance 0 only accepts identical fingerprints; no fingerprint, no near match', () => {
    expect(classifyDuplicate({ urlHash: SELF, simhash: FP, exactOf: null, candidates: [candidate(2, 1)], maxDistance: 0 })).toBeNull();
    expect(classifyDuplicate({ urlHash: SELF, simhash: FP, exactOf: null, candidates: [candidate(2, 0)], maxDistance: 0 })).toMatchObject({ kind: 'near', distance: 0 });
    expect(classifyDuplicate({ urlHash: SELF, simhash: null, exactOf: null, candidates: [candidate(2, 0)], maxDistance: 3 })).toBeNull();
  });
});

describe('duplicateHandling', () => {
  const exact = { kind: 'exact', of: hash(2), distance: 0 } as const;
  const near = { kind: 'near', of: hash(2), distance: 2 } as const;
  it.each([
    ['unique page', null, true, true, { storeBody: true, followLinks: true, index: true }],
    ['unique page, whatever the policy', null, false, false, { storeBody: true, followLinks: true, index: true }],
    ['near, defaults', near, true, true, { storeBody: true, followLinks: true, index: false }],
    ['near, bodies and links off', near, false, false, { storeBody: false, followLinks: false, index: false }],
    ['exact: body always kept (already stored)', exact, false, false, { storeBody: true, followLinks: false, index: false }],
    ['exact, links on', exact, false, true, { storeBody: true, followLinks: true, index: false }],
  ] as const)('%s', (_name, verdict, nearDupStoreBody, nearDupFollowLinks, expected) => {
    expect(duplicateHandling(verdict, { nearDupStoreBody, nearDupFollowLinks })).toEqual(expected);
  });
});
