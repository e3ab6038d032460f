import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import xxhash from 'xxhash-wasm';

// xxHash64 compiled to WebAssembly: instantiated once when the module loads, so every function
// below is synchronous. (XXH64 written in 32-bit halves in plain JavaScript was measured too: no
// faster, see docs/perf-log.md.)
const { h64Raw } = await xxhash();

/**
 * The same WebAssembly module, called on its own memory: SimHash copies a text's bytes in once
 * and hashes each shingle where it lies, where `h64Raw` copies every shingle in, checks the
 * memory's size and masks the result with BigInt arithmetic per call (three quarters of the
 * hash's cost). The package ships the binary as a file for Cloudflare's workerd (its JavaScript
 * builds inline the same bytes); null when that file cannot be loaded, and SimHash then hashes
 * through `h64Raw` (simhash.test.ts checks the two agree).
 */
interface RawXxh64 {
  memory: WasmMemory;
  /** XXH64 of `length` bytes at `offset` of `memory`: a signed 64-bit result (BigInt). */
  xxh64(offset: number, length: number, seed: bigint): bigint;
}

/** The parts of the WebAssembly API used here (the project's type libraries do not declare it). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const { WebAssembly: wasm } = globalThis as unknown as {
  WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (module: object) => { exports: Record<string, unknown> } };
};

function loadRawXxh64(): RawXxh64 | null {
  try {
    const entry = createRequire(import.meta.url).resolve('xxhash-wasm');
    const bytes = readFileSync(join(dirname(entry), '..', 'workerd', 'xxhash.wasm'));
    const { mem, xxh64 } = new wasm.Instance(new wasm.Module(bytes)).exports;
    if (typeof xxh64 !== 'function' || typeof mem !== 'object' || mem === null || !((mem as WasmMemory).buffer instanceof ArrayBuffer)) return null;
    const raw: RawXxh64 = { memory: mem as WasmMemory, xxh64: xxh64 as RawXxh64['xxh64'] };
    // One known answer (XXH64 of "abc", seed 0) before it is trusted.
    new Uint8Array(raw.memory.buffer).set([0x61, 0x62, 0x63]);
    HASH[0] = raw.xxh64(0, 3, 0n);
    return HASH[0] === 0x44bc2cf5ad770999n ? raw : null;
  } catch {
    return null;
  }
}

/**
 * Words per shingle. Word 3-grams: a one-word edit touches 3 shingles. Measured on random
 * 1,000-word texts, one edited word moves the fingerprint 1.3 bits on average (2-grams: 1.4,
 * 4-grams: 2.0) while unrelated texts stay ~32 bits apart whatever the size.
 */
export const DEFAULT_SHINGLE_SIZE = 3;

/** Ideographic and kana characters are words of their own: their text has no spaces between words. */
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/gu;

/**
 * Text as SimHash sees it: NFKC (full-width and ligature forms folded), lowercased, letters and
 * digits kept, every run of anything else (punctuation, symbols, whitespace) one space, CJK
 * characters spaced apart; an apostrophe inside a word is dropped ("don't" = "dont"). So
 * formatting, quotes and spacing changes do not move the fingerprint, and the words are exactly
 * the space-separated parts.
 */
export function normalizeText(text: string): string {
  return normalizedFast(text)?.toString('latin1') ?? normalizeUnicode(text);
}

function normalizeUnicode(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/(?<=[\p{L}\p{N}])['’](?=[\p{L}\p{N}])/gu, '')
    .replace(CJK, ' $& ')
    .replace(/[^\p{L}\p{N}\p{M}]+/gu, ' ')
    .trim();
}

/**
 * Characters outside ASCII that `normalizeUnicode` turns into a word break wherever they stand
 * (after NFKC they hold no letter, digit or mark): no-break and typographic spaces, dashes,
 * quotation marks, bullets, the ellipsis, common symbols. Prose in Latin script is ASCII but for
 * these. Each candidate is kept only if the Unicode path agrees, between letters and between
 * digits, so the set cannot drift from it.
 */
const BREAKS = new Set(
  [
    0xa0, 0xa2, 0xa3, 0xa5, 0xa7, 0xa9, 0xab, 0xad, 0xae, 0xb0, 0xb1, 0xb6, 0xb7, 0xbb, 0xbf, 0xa1, 0xd7, 0xf7, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
    0x2008, 0x2009, 0x200a, 0x200b, 0x2010, 0x2011, 0x2012, 0x2013, 0x2014, 0x2015, 0x2018, 0x201a, 0x201c, 0x201d, 0x201e, 0x2020, 0x2021, 0x2022, 0x2026,
    0x2030, 0x2039, 0x203a, 0x202f, 0x2060, 0x20ac, 0x2190, 0x2192, 0x2212, 0x25cf, 0x2605, 0x2713, 0xfeff,
  ].filter((code) => {
    const c = String.fromCharCode(code);
    return normalizeUnicode(`a${c}b`) === 'a b' && normalizeUnicode(`1${c}2`) === '1 2' && normalizeUnicode(`${c}x${c}`) === 'x';
  }),
);
/** The typographic apostrophe: dropped inside a word, as the ASCII one. */
const RIGHT_QUOTE = 0x2019;

/**
 * `normalizeUnicode` in one pass over the character codes, straight to the bytes SimHash hashes,
 * for text that is ASCII but for BREAKS and the typographic apostrophe (most pages in Latin
 * script): the same result (NFKC leaves ASCII alone; its letters and digits are [a-z0-9] once
 * lowercased; it has no marks or CJK), several times faster than the Unicode regular
 * expressions. Null when the text holds any other character. simhash.test.ts checks the two
 * agree.
 */
function normalizedFast(text: string): Buffer | null {
  const out = Buffer.allocUnsafe(text.length);
  let n = 0;
  let pendingSpace = false;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)) {
      if (pendingSpace && n > 0) out[n++] = 0x20;
      pendingSpace = false;
      out[n++] = c;
    } else if ((c === 0x27 || c === RIGHT_QUOTE) && n > 0 && !pendingSpace && isAsciiAlnum(text.charCodeAt(i + 1))) {
      // An apostrophe inside a word ("don't") is dropped: the word goes on.
    } else if (c < 0x80 || BREAKS.has(c)) {
      pendingSpace = true;
    } else {
      return null;
    }
  }
  return out.subarray(0, n);
}

function isAsciiAlnum(c: number): boolean {
  const lower = c | 0x20;
  return (lower >= 0x61 && lower <= 0x7a) || (c >= 0x30 && c <= 0x39);
}

/** The words of normalized text. */
export function tokenize(normalized: string): string[] {
  return normalized === '' ? [] : normalized.split(' ');
}

/** Overlapping word n-grams; text shorter than `size` words is one shingle. */
export function shingles(tokens: readonly string[], size = DEFAULT_SHINGLE_SIZE): string[] {
  if (tokens.length === 0) return [];
  if (tokens.length <= size) return [tokens.join(' ')];
  const out: string[] = new Array(tokens.length - size + 1);
  for (let i = 0; i + size <= tokens.length; i++) out[i] = tokens.slice(i, i + size).join(' ');
  return out;
}

export interface SimHashOptions {
  shingleSize?: number;
}

/**
 * Charikar's SimHash of a text: every shingle's 64-bit xxHash votes on each bit, and the
 * fingerprint keeps the majority. Similar texts get fingerprints a few bits apart; unrelated
 * texts differ in about 32 bits. Returned as a signed 64-bit bigint, the range of PostgreSQL's
 * `bigint`. Null for text with no words (empty pages are not near-duplicates of each other).
 */
export function simhash(text: string, options: SimHashOptions = {}): bigint | null {
  return simhashWithWords(text, options).fingerprint;
}

/** A text's SimHash (see `simhash`) and, when it took the fast path, its words. */
export interface SimHashWithWords {
  fingerprint: bigint | null;
  /**
   * The words SimHash split the text into, when the text is ASCII but for the typographic
   * breaks and apostrophes the fast path admits: runs of letters and digits, an apostrophe
   * between two of them inside the run — the count `countWords` of @trawl/parse gives (a test in
   * @trawl/crawl holds the two together). Null for other text, whose Unicode normalization
   * (NFKC, CJK characters spaced apart) counts differently.
   */
  words: number | null;
}

/** `simhash`, also giving the text's words when its one pass over the text found them (see `SimHashWithWords.words`). */
export function simhashWithWords(text: string, options: SimHashOptions = {}): SimHashWithWords {
  const size = options.shingleSize ?? DEFAULT_SHINGLE_SIZE;
  // Encoded once; a shingle is then a byte range (its words and the single spaces between
  // them), hashed in place: no string per shingle, no UTF-8 encoding per hash.
  const fast = normalizedFast(text);
  const encoded = fast ?? Buffer.from(normalizeUnicode(text), 'utf8');
  if (encoded.length === 0) return { fingerprint: null, words: fast === null ? null : 0 };
  // A plain Uint8Array view: indexing it is cheaper than a Buffer's. With the raw module, the
  // bytes are copied into its memory once and every shingle is hashed there.
  const raw = RAW;
  const bytes = raw === null ? new Uint8Array(encoded.buffer, encoded.byteOffset, encoded.length) : inRawMemory(raw, encoded);
  // Word k spans [starts[k], ends[k]): the words are exactly the space-separated parts.
  const { starts, ends, hashes } = scratchFor(bytes.length);
  let words = 0;
  starts[0] = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x20) {
      ends[words++] = i;
      starts[words] = i + 1;
    }
  }
  ends[words++] = bytes.length;
  const count = Math.max(0, words - size) + 1;
  for (let i = 0; i < count; i++) {
    const start = starts[i] as number;
    const end = ends[Math.min(i + size, words) - 1] as number;
    // The 64-bit hash's halves through a typed-array view: no BigInt arithmetic per shingle.
    HASH[0] = raw === null ? h64Raw(bytes.subarray(start, end)) : raw.xxh64(start, end - start, 0n);
    hashes[2 * i] = HALVES[0] as number;
    hashes[2 * i + 1] = HALVES[1] as number;
  }
  return { fingerprint: majorityOf(hashes, count), words: fast === null ? null : words };
}

const HASH = new BigUint64Array(1);
/** HASH's two 32-bit halves, low first: the machine's byte order, which must be little-endian. */
const HALVES = new Uint32Array(HASH.buffer);
HASH[0] = 1n;
if (HALVES[0] !== 1) throw new Error('@trawl/dedup: SimHash needs a little-endian machine');

let RAW = loadRawXxh64();

/** `bytes` at offset 0 of the raw module's memory (grown when the text is larger than any before); a view of them. */
function inRawMemory(raw: RawXxh64, bytes: Uint8Array): Uint8Array {
  const { memory } = raw;
  if (memory.buffer.byteLength < bytes.length) memory.grow(Math.ceil((bytes.length - memory.buffer.byteLength) / 65_536));
  const view = new Uint8Array(memory.buffer, 0, bytes.length);
  view.set(bytes);
  return view;
}

/** Test hook: SimHash through `h64Raw` (false) or the module's own memory (true, when it loaded). Returns whether the raw path is in use. */
export function useRawXxh64ForTesting(raw: boolean): boolean {
  RAW = raw ? loadRawXxh64() : null;
  return RAW !== null;
}

let STARTS = new Int32Array(4096);
let ENDS = new Int32Array(4096);
let HASHES = new Int32Array(8192);

/**
 * Room for a text of `bytes` bytes, reused from call to call: its word bounds (at most one word
 * per two bytes, plus one) and its shingles' hashes as 32-bit halves (at most one shingle per word).
 */
function scratchFor(bytes: number): { starts: Int32Array; ends: Int32Array; hashes: Int32Array } {
  const most = (bytes >> 1) + 2;
  if (STARTS.length < most) {
    STARTS = new Int32Array(most);
    ENDS = new Int32Array(most);
    HASHES = new Int32Array(2 * most);
  }
  return { starts: STARTS, ends: ENDS, hashes: HASHES };
}

/** Votes per bit of the 64-bit hashes, reused from call to call (64 counters: low half's bits, then high half's). */
const VOTES = new Float64Array(64);
/** Each holds four 8-bit counters of the votes since the last flush: lane j of LANES[k] counts bit 8j + k (k < 8: low half; else high half, bit 8j + k - 8). */
const LANES = new Int32Array(16);

/**
 * The fingerprint of `count` 64-bit hashes (32-bit halves, low first): a bit is set when more
 * than half of the hashes have it. The votes are counted eight bits apart, four counters to a
 * 32-bit number (SWAR): a hash costs sixteen shifts, masks and adds, with no branch, and every
 * 255 hashes, before a lane can overflow, the lanes are added into the counters.
 */
function majorityOf(hashes: Int32Array, count: number): bigint {
  const votes = VOTES.fill(0);
  const lanes = LANES;
  // The sixteen lane words in locals (registers), written out to LANES only to be flushed.
  let l0 = 0, l1 = 0, l2 = 0, l3 = 0, l4 = 0, l5 = 0, l6 = 0, l7 = 0;
  let h0 = 0, h1 = 0, h2 = 0, h3 = 0, h4 = 0, h5 = 0, h6 = 0, h7 = 0;
  const M = 0x01010101;
  for (let i = 0, pending = 0; i < count; i++) {
    const lo = hashes[2 * i] as number;
    const hi = hashes[2 * i + 1] as number;
    l0 += lo & M; l1 += (lo >>> 1) & M; l2 += (lo >>> 2) & M; l3 += (lo >>> 3) & M;
    l4 += (lo >>> 4) & M; l5 += (lo >>> 5) & M; l6 += (lo >>> 6) & M; l7 += (lo >>> 7) & M;
    h0 += hi & M; h1 += (hi >>> 1) & M; h2 += (hi >>> 2) & M; h3 += (hi >>> 3) & M;
    h4 += (hi >>> 4) & M; h5 += (hi >>> 5) & M; h6 += (hi >>> 6) & M; h7 += (hi >>> 7) & M;
    if (++pending === 255 || i === count - 1) {
      lanes[0] = l0; lanes[1] = l1; lanes[2] = l2; lanes[3] = l3; lanes[4] = l4; lanes[5] = l5; lanes[6] = l6; lanes[7] = l7;
      lanes[8] = h0; lanes[9] = h1; lanes[10] = h2; lanes[11] = h3; lanes[12] = h4; lanes[13] = h5; lanes[14] = h6; lanes[15] = h7;
      flushLanes(lanes, votes);
      l0 = l1 = l2 = l3 = l4 = l5 = l6 = l7 = 0;
      h0 = h1 = h2 = h3 = h4 = h5 = h6 = h7 = 0;
      pending = 0;
    }
  }
  let lo = 0;
  let hi = 0;
  for (let bit = 0; bit < 32; bit++) {
    if ((votes[bit] as number) * 2 > count) lo |= 1 << bit;
    if ((votes[32 + bit] as number) * 2 > count) hi |= 1 << bit;
  }
  return BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0));
}

function flushLanes(lanes: Int32Array, votes: Float64Array): void {
  for (let k = 0; k < 16; k++) {
    const packed = lanes[k] as number;
    const bit = k < 8 ? k : 24 + k;
    votes[bit] = (votes[bit] as number) + (packed & 0xff);
    votes[bit + 8] = (votes[bit + 8] as number) + ((packed >>> 8) & 0xff);
    votes[bit + 16] = (votes[bit + 16] as number) + ((packed >>> 16) & 0xff);
    votes[bit + 24] = (votes[bit + 24] as number) + (packed >>> 24);
    lanes[k] = 0;
  }
}

/** Bits in which two fingerprints differ (0–64); works on signed and unsigned forms alike. */
export function hammingDistance(a: bigint, b: bigint): number {
  const x = BigInt.asUintN(64, a ^ b);
  return popcount32(Number(x & 0xffffffffn)) + popcount32(Number(x >> 32n));
}

function popcount32(v: number): number {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/** Bands a fingerprint is indexed under. */
export const SIMHASH_BANDS = 4;
/**
 * The largest distance the banded index answers exactly: with 4 bands of 16 bits, two
 * fingerprints ≤ 3 bits apart agree on at least one whole band (pigeonhole: 3 differing bits
 * cannot touch 4 bands).
 */
export const MAX_BANDED_DISTANCE = SIMHASH_BANDS - 1;

/**
 * The four 16-bit bands of a fingerprint, band 0 the highest bits: `[band, value]` with
 * value 0–65535. Two fingerprints within MAX_BANDED_DISTANCE share at least one pair.
 */
export function simhashBands(fingerprint: bigint): [band: number, value: number][] {
  const unsigned = BigInt.asUintN(64, fingerprint);
  const out: [number, number][] = [];
  for (let band = 0; band < SIMHASH_BANDS; band++) {
    out.push([band, Number((unsigned >> BigInt(48 - 16 * band)) & 0xffffn)]);
  }
  return out;
}
