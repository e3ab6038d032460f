/**
 * Percent-encoding normalization (RFC 3986 §6.2.2.1–§6.2.2.2), applied to one URL component
 * after WHATWG parsing:
 * - an escape of an unreserved character (A–Z a–z 0–9 - . _ ~) is decoded: `%7E` → `~`;
 * - every other escape is kept and its hex digits uppercased: `%2f` → `%2F` (never decoded, so
 *   `/a%2Fb` stays distinct from `/a/b`);
 * - an ASCII character that is not allowed raw in the component is encoded: `|` → `%7C`.
 * A `%` that does not start a valid escape (`%zz`) is left as it is: browsers send it that way,
 * and rewriting it to `%25zz` could name a different resource on the server.
 */

const HEX_DIGITS = '0123456789ABCDEF';

/** Hex digit value of an ASCII code unit, or -1. */
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) HEX_VALUE[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX_VALUE[0x41 + i] = 10 + i;
  HEX_VALUE[0x61 + i] = 10 + i;
}

/** A set of ASCII characters as a lookup table: 1 = member. */
export type AsciiSet = Uint8Array;

function asciiSet(chars: string): AsciiSet {
  const set = new Uint8Array(128);
  for (let i = 0; i < chars.length; i++) set[chars.charCodeAt(i)] = 1;
  return set;
}

const ALPHA_DIGIT = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** RFC 3986 §2.3: the only characters whose escapes are equivalent to the raw character. */
const UNRESERVED = asciiSet(`${ALPHA_DIGIT}-._~`);

/**
 * Characters kept raw in a path: RFC 3986 `pchar` and `/` (§3.3). Everything else in ASCII is
 * encoded. Each set must be a subset of what WHATWG itself leaves raw in the component, or a
 * second pass through the parser would re-encode it and break idempotence.
 */
export const PATH_RAW: AsciiSet = asciiSet(`${ALPHA_DIGIT}-._~!$&'()*+,;=:@/`);

/**
 * Characters kept raw in a query parameter name or value: RFC 3986 §3.4 `query` minus `'`,
 * which WHATWG always encodes in the query of a special URL (so `%27` is its fixed point).
 * `&` never reaches here (it separates parameters) and `=` only inside a value.
 */
export const QUERY_RAW: AsciiSet = asciiSet(`${ALPHA_DIGIT}-._~!$&()*+,;=:@/?`);

/** Normalize the percent-encoding of `text` for a component whose raw characters are `raw`. */
export function normalizePercent(text: string, raw: AsciiSet): string {
  // Fast path: most components need nothing, so return the input without allocating.
  let i = 0;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25 /* % */ || (c < 128 && raw[c] !== 1)) break;
  }
  if (i === text.length) return text;

  let out = text.slice(0, i);
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25) {
      const hi = hexValue(text.charCodeAt(i + 1));
      const lo = hexValue(text.charCodeAt(i + 2));
      if (hi < 0 || lo < 0) {
        out += '%';
        continue;
      }
      const byte = (hi << 4) | lo;
      out += UNRESERVED[byte] === 1 ? String.fromCharCode(byte) : escapeByte(byte);
      i += 2;
    } else if (c < 128 && raw[c] !== 1) {
      out += escapeByte(c);
    } else {
      // Non-ASCII never gets here from WHATWG (it encodes it as UTF-8); keep it rather than guess.
      out += text[i];
    }
  }
  return out;
}

function hexValue(code: number): number {
  return code < 128 ? (HEX_VALUE[code] ?? -1) : -1;
}

function escapeByte(byte: number): string {
  return `%${HEX_DIGITS[byte >> 4]}${HEX_DIGITS[byte & 15]}`;
}
