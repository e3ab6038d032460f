/**
 * Deterministic randomness for the synthetic web. Content never uses Math.random: the same seed
 * must give the same pages, links and bodies on every run and every machine.
 */

/** mulberry32: a tiny 32-bit PRNG, good enough for choosing links and padding words. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** MurmurHash3's 32-bit finalizer: spreads every input bit over the whole word. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Combines small integers (seed, host, page, stream) into one well-mixed 32-bit value. */
export function hashInts(...values: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const value of values) {
    h = fmix32((h ^ fmix32(value >>> 0)) + 0x7f4a7c15);
  }
  return h;
}

/** An integer in [0, n). */
export function pick(random: () => number, n: number): number {
  return Math.floor(random() * n);
}
