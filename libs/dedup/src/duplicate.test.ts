import { describe, expect, it } from 'vitest';
import { classifyBatch, classifyDuplicate, duplicateHandling, type NearCandidate } from './duplicate.js';

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

describe('classifyBatch', () => {
  const page = (n: number, simhash: bigint | null, contentHash: string | null) => ({ urlHash: hash(n), simhash, contentHash });

  it('uses the database lookups, and earlier pages of the same batch', () => {
    const verdicts = classifyBatch(
      [
        page(10, FP, 'body-a'), // new: the first of its cluster
        page(11, FP ^ 0b11n, 'body-b'), // 2 bits from page 10, in the same batch
        page(12, 0x7000000000000000n, 'body-a'), // same body as page 10
        page(13, -1n, 'known'), // its body is already recorded
        page(14, null, null), // no text, no body
        page(15, FP ^ (1n << 20n), 'body-c'), // 1 bit from page 10, 2 from an indexed page
      ],
      { firstWithContent: new Map([['known', { urlHash: hash(3) }]]), candidates: [[], [], [], [], [], [candidate(4, 1, 500)]] },
      3,
      9_999,
    );
    expect(verdicts).toEqual([
      null,
      { kind: 'near', of: hash(10), distance: 2 },
      { kind: 'exact', of: hash(10), distance: 0 },
      { kind: 'exact', of: hash(3), distance: 0 },
      null,
      // Page 10 (in this batch) and the indexed page 4 are both within reach: the nearest wins.
      { kind: 'near', of: hash(10), distance: 1 },
    ]);
  });

  it('a duplicate in the batch does not become a head for later pages', () => {
    const verdicts = classifyBatch([page(20, FP, 'x'), page(21, FP, 'x'), page(22, FP ^ 0b1n, 'y')], { firstWithContent: new Map(), candidates: [] }, 3, 0);
    expect(verdicts).toEqual([null, { kind: 'exact', of: hash(20), distance: 0 }, { kind: 'near', of: hash(20), distance: 1 }]);
  });

  it('a byte-identical copy of a near-duplicate in the same batch is an exact duplicate of it', () => {
    const verdicts = classifyBatch([page(30, FP, 'x'), page(31, FP ^ 0b1n, 'y'), page(32, FP ^ 0b1n, 'y')], { firstWithContent: new Map(), candidates: [] }, 3, 0);
    expect(verdicts).toEqual([null, { kind: 'near', of: hash(30), distance: 1 }, { kind: 'exact', of: hash(31), distance: 0 }]);
  });
});
