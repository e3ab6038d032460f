import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import { xxh64Into } from './xxh64.js';

const { h64Raw } = await xxhash();

/** The reference's 64-bit hash as the two signed halves xxh64Into writes. */
function reference(bytes: Uint8Array): [number, number] {
  const value = h64Raw(bytes);
  return [Number(value & 0xffffffffn) | 0, Number(value >> 32n) | 0];
}

function ours(bytes: Uint8Array, start = 0, end = bytes.length): [number, number] {
  const out = new Int32Array(2);
  xxh64Into(bytes, start, end, out);
  return [out[0] as number, out[1] as number];
}

/** A deterministic byte generator (xorshift), so a failure names its input. */
function bytesOf(seed: number, length: number): Uint8Array {
  let x = seed || 1;
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

describe('xxh64Into', () => {
  it('matches the reference XXH64 on every length from 0 to 200 bytes, over many inputs', () => {
    for (let length = 0; length <= 200; length++) {
      for (let seed = 1; seed <= 20; seed++) {
        const bytes = bytesOf(seed * 7919 + length, length);
        expect(ours(bytes), `length ${length}, seed ${seed}`).toEqual(reference(bytes));
      }
    }
  });

  it('matches it on bytes that stress the carries (all 0xff, all zero) and on long inputs', () => {
    for (const length of [0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 65, 1000, 4099]) {
      for (const fill of [0x00, 0xff, 0x80]) {
        const bytes = new Uint8Array(length).fill(fill);
        expect(ours(bytes), `length ${length}, fill ${fill}`).toEqual(reference(bytes));
      }
    }
    const long = bytesOf(42, 100_000);
    expect(ours(long)).toEqual(reference(long));
  });

  it('hashes a range in place, as the range copied out', () => {
    const bytes = new TextEncoder().encode('the quick brown fox jumps over the lazy dog again and again');
    for (const [start, end] of [
      [0, 9],
      [4, 19],
      [10, 58],
      [20, 20],
    ] as const) {
      expect(ours(bytes, start, end)).toEqual(reference(bytes.slice(start, end)));
    }
  });

  it('gives the published value for the empty input and a known string', () => {
    // XXH64("", 0) = 0xef46db3751d8e999; XXH64("abc", 0) = 0x44bc2cf5ad770999.
    expect(ours(new Uint8Array(0))).toEqual([0x51d8e999 | 0, 0xef46db37 | 0]);
    expect(ours(new TextEncoder().encode('abc'))).toEqual([0xad770999 | 0, 0x44bc2cf5 | 0]);
  });
});
