/**
 * XXH64 (seed 0) of a byte range, computed on 32-bit halves held in plain numbers: no BigInt and
 * no copy into WebAssembly memory per call, which is what hashing thousands of short shingles
 * per page costs with a general-purpose binding. The result is the reference algorithm's, bit
 * for bit (xxh64.test.ts checks it against xxhash-wasm on random inputs of every length).
 *
 * A 64-bit value is a pair (hi, lo) of 32-bit halves, held as signed int32 (small integers
 * to V8, never boxed). The helpers below leave their
 * result in a two-slot typed array (`R`: high, low) instead of returning an object, so the hot
 * loop allocates nothing: a module-level `let` holding a number above 2^31 would box it on
 * every write.
 */

const R = new Int32Array(2);
const hi = (): number => R[0] as number;
const lo = (): number => R[1] as number;

// The five primes of XXH64, as halves.
const P1H = 0x9e3779b1 | 0;
const P1L = 0x85ebca87 | 0;
const P2H = 0xc2b2ae3d | 0;
const P2L = 0x27d4eb4f | 0;
const P3H = 0x165667b1 | 0;
const P3L = 0x9e3779f9 | 0;
const P4H = 0x85ebca77 | 0;
const P4L = 0xc2b2ae63 | 0;
const P5H = 0x27d4eb2f | 0;
const P5L = 0x165667c5 | 0;

/** 0 − P1 mod 2^64 (P1's low half is not 0, so no borrow reaches the high half). */
const NEG_P1H = ~P1H;
const NEG_P1L = -P1L | 0;

const TWO_32 = 0x1_0000_0000;

/**
 * (ah, al) × (bh, bl) mod 2^64. The low halves' full 64-bit product is built from 16-bit
 * pieces with shifts and masks only (a remainder or a division of doubles would cost a call).
 */
function mul(ah: number, al: number, bh: number, bl: number): void {
  const a0 = al & 0xffff;
  const a1 = al >>> 16;
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  const p00 = a0 * b0;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const middle = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  R[1] = (middle << 16) | (p00 & 0xffff);
  R[0] = a1 * b1 + (p01 >>> 16) + (p10 >>> 16) + (middle >>> 16) + Math.imul(al, bh) + Math.imul(ah, bl);
}

/** (ah, al) + (bh, bl) mod 2^64. */
function add(ah: number, al: number, bh: number, bl: number): void {
  const low = (al >>> 0) + (bl >>> 0);
  R[1] = low | 0;
  R[0] = (ah + bh + (low >= TWO_32 ? 1 : 0)) | 0;
}

/** Rotate left by 0 < r < 32. */
function rotl(h: number, l: number, r: number): void {
  R[0] = (h << r) | (l >>> (32 - r));
  R[1] = (l << r) | (h >>> (32 - r));
}

/** XXH64's round: acc + input × P2, rotated left 31, × P1. */
function round(acch: number, accl: number, inh: number, inl: number): void {
  mul(inh, inl, P2H, P2L);
  add(acch, accl, hi(), lo());
  rotl(hi(), lo(), 31);
  mul(hi(), lo(), P1H, P1L);
}

/** XXH64's merge of a lane into the accumulator: acc ^ round(0, lane), × P1, + P4. */
function mergeRound(acch: number, accl: number, vh: number, vl: number): void {
  round(0, 0, vh, vl);
  mul(acch ^ hi(), accl ^ lo(), P1H, P1L);
  add(hi(), lo(), P4H, P4L);
}

function u32At(bytes: Uint8Array, i: number): number {
  return (bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24);
}

/**
 * XXH64 with seed 0 of `bytes[start, end)`, written to `out` as its low and high 32-bit halves
 * (signed, as an Int32Array holds them).
 */
export function xxh64Into(bytes: Uint8Array, start: number, end: number, out: Int32Array): void {
  const length = end - start;
  let p = start;
  let hh: number;
  let hl: number;
  if (length >= 32) {
    // Four lanes over 32-byte stripes, seeded seed + P1 + P2, seed + P2, seed, seed − P1.
    add(P1H, P1L, P2H, P2L);
    let v1h = hi();
    let v1l = lo();
    let v2h = P2H;
    let v2l = P2L;
    let v3h = 0;
    let v3l = 0;
    let v4h = NEG_P1H;
    let v4l = NEG_P1L;
    for (const limit = end - 32; p <= limit; p += 32) {
      round(v1h, v1l, u32At(bytes, p + 4), u32At(bytes, p));
      v1h = hi();
      v1l = lo();
      round(v2h, v2l, u32At(bytes, p + 12), u32At(bytes, p + 8));
      v2h = hi();
      v2l = lo();
      round(v3h, v3l, u32At(bytes, p + 20), u32At(bytes, p + 16));
      v3h = hi();
      v3l = lo();
      round(v4h, v4l, u32At(bytes, p + 28), u32At(bytes, p + 24));
      v4h = hi();
      v4l = lo();
    }
    rotl(v1h, v1l, 1);
    hh = hi();
    hl = lo();
    rotl(v2h, v2l, 7);
    add(hh, hl, hi(), lo());
    hh = hi();
    hl = lo();
    rotl(v3h, v3l, 12);
    add(hh, hl, hi(), lo());
    hh = hi();
    hl = lo();
    rotl(v4h, v4l, 18);
    add(hh, hl, hi(), lo());
    hh = hi();
    hl = lo();
    mergeRound(hh, hl, v1h, v1l);
    mergeRound(hi(), lo(), v2h, v2l);
    mergeRound(hi(), lo(), v3h, v3l);
    mergeRound(hi(), lo(), v4h, v4l);
    hh = hi();
    hl = lo();
  } else {
    hh = P5H;
    hl = P5L;
  }
  add(hh, hl, 0, length);
  hh = hi();
  hl = lo();
  for (; p + 8 <= end; p += 8) {
    round(0, 0, u32At(bytes, p + 4), u32At(bytes, p));
    rotl(hh ^ hi(), hl ^ lo(), 27);
    mul(hi(), lo(), P1H, P1L);
    add(hi(), lo(), P4H, P4L);
    hh = hi();
    hl = lo();
  }
  if (p + 4 <= end) {
    mul(0, u32At(bytes, p), P1H, P1L);
    rotl(hh ^ hi(), hl ^ lo(), 23);
    mul(hi(), lo(), P2H, P2L);
    add(hi(), lo(), P3H, P3L);
    hh = hi();
    hl = lo();
    p += 4;
  }
  for (; p < end; p++) {
    mul(0, bytes[p] as number, P5H, P5L);
    rotl(hh ^ hi(), hl ^ lo(), 11);
    mul(hi(), lo(), P1H, P1L);
    hh = hi();
    hl = lo();
  }
  // Avalanche: h ^= h >> 33; h ×= P2; h ^= h >> 29; h ×= P3; h ^= h >> 32.
  mul(hh, hl ^ (hh >>> 1), P2H, P2L);
  hh = hi();
  hl = lo();
  mul(hh ^ (hh >>> 29), hl ^ ((hl >>> 29) | (hh << 3)), P3H, P3L);
  hh = hi();
  hl = lo();
  out[0] = hl ^ hh;
  out[1] = hh;
}
