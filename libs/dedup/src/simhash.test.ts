import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import {
  hammingDistance,
  MAX_BANDED_DISTANCE,
  normalizeText,
  shingles,
  simhash,
  simhashBands,
  tokenize,
  useRawXxh64ForTesting,
} from './simhash.js';

/** A deterministic text of `n` words over a 3,000-word vocabulary (LCG, fixed seed). */
function words(n: number, seed: number): string[] {
  let state = seed >>> 0;
  return Array.from({ length: n }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return `w${Math.floor((state / 2 ** 32) * 3000).toString(36)}`;
  });
}

const MIN_INT64 = -(2n ** 63n);
const MAX_INT64 = 2n ** 63n - 1n;

describe('hammingDistance', () => {
  it.each([
    [0n, 0n, 0],
    [0n, 1n, 1],
    [0n, -1n, 64],
    [0x0fn, 0xf0n, 8],
    [MIN_INT64, 0n, 1],
    [MAX_INT64, MIN_INT64, 64],
    [-1n, BigInt.asUintN(64, -1n), 0], // signed and unsigned forms of one fingerprint
    [0x5555555555555555n, -0x5555555555555556n, 64], // 0x5555… vs 0xAAAA…
    [0x1n << 40n, 0x1n << 41n, 2],
  ])('%s vs %s → %i', (a, b, expected) => {
    expect(hammingDistance(a, b)).toBe(expected);
    expect(hammingDistance(b, a)).toBe(expected);
  });
});

describe('normalization and shingles', () => {
  it.each([
    ['Hello, World!', 'hello world'],
    ['  many\n\t spaces  ', 'many spaces'],
    ["Don't stop", 'dont stop'],
    ['ＦＵＬＬ－ｗｉｄｔｈ', 'full width'],
    ['price: $9.99 (USD)', 'price 9 99 usd'],
    ['Ελληνικά ΚΕΙΜΕΝΟ', 'ελληνικά κειμενο'],
    ['', ''],
  ])('normalizeText(%j) = %j', (input, expected) => {
    expect(normalizeText(input)).toBe(expected);
  });

  it('tokenizes CJK one character at a time, other scripts by word', () => {
    expect(tokenize(normalizeText('東京タワー is tall'))).toEqual(['東', '京', 'タ', 'ワ', 'ー', 'is', 'tall']);
    expect(tokenize('')).toEqual([]);
  });

  it('shingles overlap; a short text is one shingle; none for no words', () => {
    expect(shingles(['a', 'b', 'c', 'd'], 3)).toEqual(['a b c', 'b c d']);
    expect(shingles(['a', 'b'], 3)).toEqual(['a b']);
    expect(shingles([], 3)).toEqual([]);
  });
});

/** Charikar's SimHash written the textbook way: a string per shingle, 64 counters. */
const { h64 } = await xxhash();
function referenceSimhash(text: string, size = 3): bigint | null {
  const grams = shingles(tokenize(normalizeText(text)), size);
  if (grams.length === 0) return null;
  const votes = new Array<number>(64).fill(0);
  for (const gram of grams) {
    const hash = BigInt.asUintN(64, h64(gram));
    for (let bit = 0; bit < 64; bit++) votes[bit] = (votes[bit] ?? 0) + ((hash >> BigInt(bit)) & 1n ? 1 : -1);
  }
  let out = 0n;
  for (let bit = 0; bit < 64; bit++) if ((votes[bit] ?? 0) > 0) out |= 1n << BigInt(bit);
  return BigInt.asIntN(64, out);
}

describe('simhash', () => {
  it('equals the textbook definition (string shingles, 64 vote counters)', () => {
    const texts = [
      'a',
      'two words',
      'exactly three words',
      ...Array.from({ length: 20 }, (_, i) => words(10 + i * 37, i + 1).join(' ')),
      '東京タワーは高い。 Tokyo Tower is tall, isn\'t it? 東京',
      'Ελληνικά κείμενα και ﬁ ligatures — ＦＵＬＬ width',
    ];
    for (const text of texts) expect(simhash(text)).toBe(referenceSimhash(text));
    for (const size of [1, 2, 5]) expect(simhash(words(300, 9).join(' '), { shingleSize: size })).toBe(referenceSimhash(words(300, 9).join(' '), size));
  });

  it('is stable: these fingerprints are stored in PostgreSQL, so they must never change', () => {
    // Pinned from this implementation (xxHash64 seed 0, word 3-grams). A change here
    // invalidates every stored fingerprint and needs a re-index.
    expect(simhash('The quick brown fox jumps over the lazy dog')).toBe(simhash('the QUICK brown fox — jumps over the lazy dog.'));
    expect(simhash('The quick brown fox jumps over the lazy dog')).toBe(4174202982523779191n);
  });

  it('hashes shingles in the WebAssembly module\'s own memory, with the fingerprints of h64Raw', () => {
    const texts = [
      'a',
      'exactly three words',
      ...Array.from({ length: 30 }, (_, i) => words(5 + i * 113, i + 40).join(' ')),
      // Larger than any text before: the module's memory grows.
      words(60_000, 77).join(' '),
      'Ελληνικά κείμενα και ﬁ ligatures — ＦＵＬＬ width 東京タワー',
    ];
    try {
      expect(useRawXxh64ForTesting(false)).toBe(false);
      const viaCopies = texts.map((text) => simhash(text));
      // The raw module loads here (the package ships its binary): otherwise every page pays h64Raw's copies.
      expect(useRawXxh64ForTesting(true)).toBe(true);
      expect(texts.map((text) => simhash(text))).toEqual(viaCopies);
      // A small text after a large one: only its own bytes count.
      expect(simhash(texts[1] as string)).toBe(viaCopies[1]);
    } finally {
      useRawXxh64ForTesting(true);
    }
  });

  it('keeps the majority of each bit, as 64 plain counters would, around every flush of its 8-bit vote lanes', () => {
    // The reference: every shingle's XXH64 (seed 0) votes on each of the 64 bits, one counter per bit.
    const reference = (text: string): bigint => {
      const all = shingles(tokenize(normalizeText(text)));
      const votes = new Array<number>(64).fill(0);
      for (const shingle of all) {
        const hash = h64(shingle, 0n);
        for (let bit = 0; bit < 64; bit++) votes[bit] = (votes[bit] ?? 0) + Number((hash >> BigInt(bit)) & 1n);
      }
      let fingerprint = 0n;
      for (let bit = 0; bit < 64; bit++) if (votes[bit]! * 2 > all.length) fingerprint |= 1n << BigInt(bit);
      return BigInt.asIntN(64, fingerprint);
    };
    // Lanes are added into the counters every 255 hashes: shingle counts on both sides of 255 and 510.
    for (const n of [1, 2, 3, 4, 100, 256, 257, 258, 259, 512, 513, 514, 1300]) {
      const text = words(n, n).join(' ');
      expect(simhash(text), `${n} words`).toBe(reference(text));
    }
    // A text where most shingles are one repeated phrase: bits far from a tie, lanes near full.
    const repeated = `${'same words again '.repeat(600)}${words(40, 9).join(' ')}`;
    expect(simhash(repeated)).toBe(reference(repeated));
  });

  it('is null for text without words', () => {
    expect(simhash('')).toBeNull();
    expect(simhash(' ... !!! ')).toBeNull();
  });

  it('returns a signed 64-bit value (PostgreSQL bigint)', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const value = simhash(words(200, seed).join(' '));
      expect(value).not.toBeNull();
      expect(value! >= MIN_INT64 && value! <= MAX_INT64).toBe(true);
    }
  });

  it('ignores formatting: case, punctuation and whitespace', () => {
    const text = words(300, 7).join(' ');
    const reformatted = words(300, 7)
      .map((w, i) => (i % 10 === 0 ? `${w.toUpperCase()},` : w))
      .join('  \n ');
    expect(hammingDistance(simhash(text)!, simhash(reformatted)!)).toBe(0);
  });

  it('small edits move it a few bits; unrelated texts ~32 bits apart', () => {
    const oneEdit: number[] = [];
    const unrelated: number[] = [];
    for (let seed = 1; seed <= 40; seed++) {
      const text = words(1000, seed);
      const edited = [...text];
      edited[(seed * 37) % 1000] = 'edited';
      oneEdit.push(hammingDistance(simhash(text.join(' '))!, simhash(edited.join(' '))!));
      unrelated.push(hammingDistance(simhash(text.join(' '))!, simhash(words(1000, seed + 1000).join(' '))!));
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(oneEdit)).toBeLessThanOrEqual(3);
    expect(oneEdit.filter((d) => d <= MAX_BANDED_DISTANCE).length).toBeGreaterThanOrEqual(30);
    expect(mean(unrelated)).toBeGreaterThan(26);
    expect(Math.min(...unrelated)).toBeGreaterThan(12);
  });

  it('an appended footer or a changed date on a long page stays within 3 bits', () => {
    const article = words(1500, 99).join(' ');
    const base = simhash(`Published 2024-01-01. ${article}`)!;
    expect(hammingDistance(base, simhash(`Published 2024-03-17. ${article}`)!)).toBeLessThanOrEqual(3);
    expect(hammingDistance(base, simhash(`Published 2024-01-01. ${article} Share this page`)!)).toBeLessThanOrEqual(3);
  });
});

describe('simhashBands', () => {
  it('splits into four 16-bit bands, highest first', () => {
    expect(simhashBands(0x0123456789abcdefn)).toEqual([[0, 0x0123], [1, 0x4567], [2, 0x89ab], [3, 0xcdef]]);
    expect(simhashBands(-1n)).toEqual([[0, 0xffff], [1, 0xffff], [2, 0xffff], [3, 0xffff]]);
  });

  it('pigeonhole: fingerprints within 3 bits always share a band', () => {
    let state = 12345;
    const next = (): number => (state = (Math.imul(state, 1103515245) + 12345) >>> 0);
    for (let trial = 0; trial < 2000; trial++) {
      const a = BigInt.asIntN(64, (BigInt(next()) << 32n) | BigInt(next()));
      let b = a;
      const flips = 1 + (trial % MAX_BANDED_DISTANCE);
      for (let f = 0; f < flips; f++) b ^= 1n << BigInt(next() % 64);
      b = BigInt.asIntN(64, b);
      const bandsA = simhashBands(a).map(([band, value]) => `${band}:${value}`);
      expect(simhashBands(b).some(([band, value]) => bandsA.includes(`${band}:${value}`))).toBe(true);
    }
  });
});

describe('the fast path (ASCII, with common typographic breaks and apostrophes)', () => {
  // A text ending in a separator the fast path does not know (a three-em dash, U+2E3B) takes
  // the Unicode path; the same text without it the fast one. Both must give the same words and
  // the same fingerprint.
  const unicodeOnly = ' \u2E3B';
  const typographic = '\u00a0\u00a9\u00b7\u2013\u2014\u2018\u2019\u201c\u201d\u2022\u2026\u20ac\u200b\u00ad';
  const alphabet = `abcXYZ09 '.,-_\t\n!?'"()AbC${typographic}`;
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const texts = Array.from({ length: 3000 }, () => Array.from({ length: 1 + Math.floor(random() * 40) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(''));
  texts.push("don't stop", "a''b", "'quoted' words", "it's 9 O'Clock", "  spaced   out  ", "", "'", "a'", "'a", "rock'n'roll");
  texts.push('don\u2019t stop', 'a\u2019\u2019b', '\u2018quoted\u2019 words', 'l\u2019\u00e9t\u00e9', 'x \u00b7 y', 'wait\u2026 what', '5\u00a0000 \u20ac');

  it('normalizes exactly as the Unicode path does', () => {
    for (const text of texts) expect(normalizeText(text), JSON.stringify(text)).toBe(normalizeText(`${text}${unicodeOnly}`));
  });

  it('fingerprints exactly as the Unicode path does', () => {
    for (const text of texts) expect(simhash(text), JSON.stringify(text)).toBe(simhash(`${text}${unicodeOnly}`));
  });

  it('keeps to the Unicode path for characters it does not know (accents, ligatures, symbols that fold to letters)', () => {
    expect(normalizeText('Caf\u00e9 \ufb01ne \u2122 \u00bd')).toBe('caf\u00e9 fine tm 1 2');
  });
});
