import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import { xxh64, xxh64Hi, xxh64Lo } from './xxh64.js';

const { h64Raw } = await xxhash();

/** Deterministic bytes (LCG, fixed seed). */
function bytes(n: number, seed: number): Uint8Array {
  let state = seed >>> 0;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    out[i] = state >>> 24;
  }
  return out;
}

function lanes(input: Uint8Array, start = 0, end = input.length): bigint {
  xxh64(input, start, end);
  return (BigInt(xxh64Hi >>> 0) << 32n) | BigInt(xxh64Lo >>> 0);
}

describe('xxh64 in 32-bit lanes', () => {
  it('matches the reference vectors of the xxHash specification (seed 0)', () => {
    expect(lanes(new Uint8Array(0))).toBe(0xef46db3751d8e999n);
    expect(lanes(new TextEncoder().encode('a'))).toBe(0xd24ec4f1a98c6e5bn);
    expect(lanes(new TextEncoder().encode('abc'))).toBe(0x44bc2cf5ad770999n);
  });

  it('gives what xxhash-wasm gives for every length up to 300 and on 0xff bytes (carries)', () => {
    for (let n = 0; n <= 300; n++) {
      for (const input of [bytes(n, n * 7919 + 1), new Uint8Array(n).fill(0xff), new Uint8Array(n)]) {
        expect(lanes(input), `length ${n}`).toBe(h64Raw(input));
      }
    }
  });

  it('hashes a range in place like its copy', () => {
    const input = bytes(1000, 42);
    for (const [start, end] of [[0, 0], [3, 20], [17, 80], [1, 999], [500, 533]] as const) {
      expect(lanes(input, start, end)).toBe(h64Raw(input.slice(start, end)));
    }
  });

  it('agrees on 20,000 random inputs of random lengths', () => {
    let state = 7;
    for (let i = 0; i < 20_000; i++) {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      const input = bytes(state % 120, state);
      expect(lanes(input)).toBe(h64Raw(input));
    }
  });
});
