/**
 * Text PostgreSQL can store. A `text` value can never hold U+0000 (the server refuses the whole
 * statement: `invalid byte sequence for encoding "UTF8": 0x00`), and a lone UTF-16 surrogate has
 * no UTF-8 encoding at all, so both come out here, before any text reaches a statement: NUL
 * characters are dropped and lone surrogates become U+FFFD (the replacement character), as a
 * UTF-8 decoder would render them. Well-formed text comes back unchanged (and unallocated).
 * Pages are hostile input: a `<link rel=canonical>` or a header can carry either.
 */
export function storableText(value: string): string {
  if (!NEEDS_CLEANING.test(value)) return value;
  return value.replace(NUL, '').replace(LONE_SURROGATE, '\uFFFD');
}

/** `storableText` for a nullable column. */
export function storableTextOrNull(value: string | null | undefined): string | null {
  return value === null || value === undefined ? null : storableText(value);
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const NUL = /\0/g;
const NEEDS_CLEANING = /\0|[\uD800-\uDFFF]/;
