/**
 * XXH64 (xxHash's 64-bit hash with seed 0, as specified in Cyan4973/xxHash
 * doc/xxhash_spec.md) of a byte range, computed in two 32-bit lanes held in plain numbers: no
 * BigInt, no allocation and no call into WebAssembly per hash. SimHash hashes every shingle of
 * a page (a few thousand short byte ranges), where making a BigInt of each hash cost about as
 * much as the hashing.
 *
 * The result is the 64 bits xxhash-wasm's `h64Raw` gives (xxh64.test.ts compares them), so
 * fingerprints stored before stay comparable. It is left in `xxh64Hi` / `xxh64Lo` (the halves
 * as signed 32-bit integers) rather than returned, so a hash costs no object either. Every
 * helper below returns ONE half as an int32: V8 inlines them and keeps the halves in
 * registers (helpers that wrote both halves to shared variables were 2.5× slower).
 */

// The five primes as high and low halves (int32).
const P1_HI = 0x9e3779b1 | 0;
const P1_LO = 0x85ebca87 | 0;
const P2_HI = 0xc2b2ae3d | 0;
const P2_LO = 0x27d4eb4f | 0;
const P3_HI = 0x165667b1 | 0;
const P3_LO = 0x9e3779f9 | 0;
const P4_HI = 0x85ebca77 | 0;
const P4_LO = 0xc2b2ae63 | 0;
const P5_HI = 0x27d4eb2f | 0;
const P5_LO = 0x165667c5 | 0;

/** The high half of the last hash (as an int32: `>>> 0` for the unsigned value). */
export let xxh64Hi = 0;
/** The low half of the last hash (as an int32). */
export let xxh64Lo = 0;

/** High half of (a × b) mod 2^64; the low half is `Math.imul(aLo, bLo)`. */
function mulHi(aHi: number, aLo: number, bHi: number, bLo: number): number {
  // The high half of the unsigned aLo × bLo from 16-bit pieces (each product < 2^32, every sum
  // exact in a double), plus the cross terms, which only reach the high half.
  const a0 = aLo & 0xffff;
  const a1 = aLo >>> 16;
  const b0 = bLo & 0xffff;
  const b1 = bLo >>> 16;
  const mid = a1 * b0 + a0 * b1; // < 2^33
  // `mid & 0xffff` keeps mid's low 16 bits exactly (ToInt32 only drops multiples of 2^32).
  const low = a0 * b0 + (mid & 0xffff) * 0x10000; // < 2^33
  return (a1 * b1 + ((mid / 0x10000) | 0) + (low > 0xffffffff ? 1 : 0) + Math.imul(aHi, bLo) + Math.imul(aLo, bHi)) | 0;
}

/** High half of (a + b) mod 2^64; the low half is `(aLo + bLo) | 0`. */
function addHi(aHi: number, aLo: number, bHi: number, bLo: number): number {
  return (aHi + bHi + ((aLo >>> 0) + (bLo >>> 0) > 0xffffffff ? 1 : 0)) | 0;
}

/** Halves of a 64-bit value rotated left by `bits` (1–31): the half that starts as `x`, `y` the other. */
function rotl(x: number, y: number, bits: number): number {
  return (x << bits) | (y >>> (32 - bits));
}

function read32(bytes: Uint8Array, at: number): number {
  return (bytes[at] as number) | ((bytes[at + 1] as number) << 8) | ((bytes[at + 2] as number) << 16) | ((bytes[at + 3] as number) << 24);
}

// XXH64's round(acc, input) = rotl(acc + input × P2, 31) × P1, half by half.
let roundHi = 0;
let roundLo = 0;
function round(accHi: number, accLo: number, inHi: number, inLo: number): void {
  const mHi = mulHi(inHi, inLo, P2_HI, P2_LO);
  const mLo = Math.imul(inLo, P2_LO);
  const sHi = addHi(accHi, accLo, mHi, mLo);
  const sLo = (accLo + mLo) | 0;
  const rHi = rotl(sHi, sLo, 31);
  const rLo = rotl(sLo, sHi, 31);
  roundHi = mulHi(rHi, rLo, P1_HI, P1_LO);
  roundLo = Math.imul(rLo, P1_LO);
}

/** XXH64 with seed 0 of `bytes[start, end)`; the result is left in `xxh64Hi` / `xxh64Lo`. */
export function xxh64(bytes: Uint8Array, start: number, end: number): void {
  const length = end - start;
  let p = start;
  let hHi = P5_HI;
  let hLo = P5_LO;
  if (length >= 32) {
    stripes(bytes, start, end);
    hHi = stripesHi;
    hLo = stripesLo;
    p = stripesEnd;
  }
  // h += length
  hHi = addHi(hHi, hLo, (length / 0x100000000) | 0, length | 0);
  hLo = (hLo + length) | 0;
  for (; p + 8 <= end; p += 8) {
    // h = rotl(h ^ round(0, lane), 27) × P1 + P4
    const inLo = read32(bytes, p);
    const inHi = read32(bytes, p + 4);
    let kHi = mulHi(inHi, inLo, P2_HI, P2_LO);
    let kLo = Math.imul(inLo, P2_LO);
    const rHi = rotl(kHi, kLo, 31);
    const rLo = rotl(kLo, kHi, 31);
    kHi = mulHi(rHi, rLo, P1_HI, P1_LO) ^ hHi;
    kLo = Math.imul(rLo, P1_LO) ^ hLo;
    const tHi = rotl(kHi, kLo, 27);
    const tLo = rotl(kLo, kHi, 27);
    const mHi = mulHi(tHi, tLo, P1_HI, P1_LO);
    const mLo = Math.imul(tLo, P1_LO);
    hHi = addHi(mHi, mLo, P4_HI, P4_LO);
    hLo = (mLo + P4_LO) | 0;
  }
  if (p + 4 <= end) {
    // h = rotl(h ^ (lane32 × P1), 23) × P2 + P3
    const in32 = read32(bytes, p);
    const kHi = mulHi(0, in32, P1_HI, P1_LO) ^ hHi;
    const kLo = Math.imul(in32, P1_LO) ^ hLo;
    const tHi = rotl(kHi, kLo, 23);
    const tLo = rotl(kLo, kHi, 23);
    const mHi = mulHi(tHi, tLo, P2_HI, P2_LO);
    const mLo = Math.imul(tLo, P2_LO);
    hHi = addHi(mHi, mLo, P3_HI, P3_LO);
    hLo = (mLo + P3_LO) | 0;
    p += 4;
  }
  for (; p < end; p++) {
    // h = rotl(h ^ (byte × P5), 11) × P1
    const byte = bytes[p] as number;
    const kHi = mulHi(0, byte, P5_HI, P5_LO) ^ hHi;
    const kLo = Math.imul(byte, P5_LO) ^ hLo;
    const tHi = rotl(kHi, kLo, 11);
    const tLo = rotl(kLo, kHi, 11);
    hHi = mulHi(tHi, tLo, P1_HI, P1_LO);
    hLo = Math.imul(tLo, P1_LO);
  }
  // Avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32.
  hLo ^= hHi >>> 1;
  let mHi = mulHi(hHi, hLo, P2_HI, P2_LO);
  let mLo = Math.imul(hLo, P2_LO);
  hLo = mLo ^ ((mLo >>> 29) | (mHi << 3));
  hHi = mHi ^ (mHi >>> 29);
  mHi = mulHi(hHi, hLo, P3_HI, P3_LO);
  mLo = Math.imul(hLo, P3_LO);
  xxh64Hi = mHi;
  xxh64Lo = mLo ^ mHi;
}

/**
 * The 32-byte stripes of an input of 32 bytes or more, through four accumulators (v1 = P1 + P2,
 * v2 = P2, v3 = 0, v4 = -P1), merged: the hash so far and where the stripes ended are left in
 * `stripesHi`, `stripesLo` and `stripesEnd`.
 */
function stripes(bytes: Uint8Array, start: number, end: number): void {
  const v = ACCUMULATORS;
  v.set(INITIAL_ACCUMULATORS);
  let p = start;
  for (; p + 32 <= end; p += 32) {
    for (let lane = 0; lane < 4; lane++) {
      round(v[2 * lane] as number, v[2 * lane + 1] as number, read32(bytes, p + 8 * lane + 4), read32(bytes, p + 8 * lane));
      v[2 * lane] = roundHi;
      v[2 * lane + 1] = roundLo;
    }
  }
  // h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)
  let hHi = 0;
  let hLo = 0;
  for (let lane = 0; lane < 4; lane++) {
    const bits = MERGE_ROTATIONS[lane] as number;
    const vHi = v[2 * lane] as number;
    const vLo = v[2 * lane + 1] as number;
    const rHi = rotl(vHi, vLo, bits);
    const rLo = rotl(vLo, vHi, bits);
    hHi = addHi(hHi, hLo, rHi, rLo);
    hLo = (hLo + rLo) | 0;
  }
  // mergeRound, each accumulator: h = (h ^ round(0, v)) × P1 + P4
  for (let lane = 0; lane < 4; lane++) {
    round(0, 0, v[2 * lane] as number, v[2 * lane + 1] as number);
    const xHi = hHi ^ roundHi;
    const xLo = hLo ^ roundLo;
    const mHi = mulHi(xHi, xLo, P1_HI, P1_LO);
    const mLo = Math.imul(xLo, P1_LO);
    hHi = addHi(mHi, mLo, P4_HI, P4_LO);
    hLo = (mLo + P4_LO) | 0;
  }
  stripesHi = hHi;
  stripesLo = hLo;
  stripesEnd = p;
}
/** v1…v4 as high, low pairs; reused (nothing is allocated per hash). */
const ACCUMULATORS = new Int32Array(8);
const INITIAL_ACCUMULATORS = new Int32Array([addHi(P1_HI, P1_LO, P2_HI, P2_LO), (P1_LO + P2_LO) | 0, P2_HI, P2_LO, 0, 0, addHi(~P1_HI, ~P1_LO, 0, 1), (~P1_LO + 1) | 0]);
const MERGE_ROTATIONS = [1, 7, 12, 18];
let stripesHi = 0;
let stripesLo = 0;
let stripesEnd = 0;
