/**
 * Usage preferences in robots.txt: `Content-Signal` lines (the Content Signals Policy:
 * `Content-Signal: search=yes, ai-input=yes, ai-train=no`) and `Content-Usage` lines of the IETF
 * AI-preferences drafts (draft-ietf-aipref-attach, with the draft-ietf-aipref-vocab vocabulary:
 * `Content-Usage: /archive/ train-ai=n, search=y`). trawl reads them for operators only: they
 * never decide what is fetched, and never allow more than the file's rules do.
 */
import type { GroupRecord } from './lines.js';

export interface UsagePreference {
  /** The robots.txt record it came from. */
  record: 'content-signal' | 'content-usage';
  /** A path prefix the preference is limited to, or null for the whole site. */
  path: string | null;
  /** Category → value as written, both lower case (`ai-train` → `no`, `train-ai` → `n`). */
  values: Record<string, string>;
}

/** Categories kept per record and records kept per file at most: a hostile file stays small. */
const MAX_VALUES = 32;
const MAX_PREFERENCES = 64;
const KEY = /^[a-z*][a-z0-9_\-.*]*$/;

/**
 * The preferences of these records, in order. A value is an optional path (it starts with `/`)
 * and then comma-separated `category=value` pairs (an RFC 9651 dictionary of tokens, read
 * leniently: white space around items, quotes around values and unknown parameters tolerated);
 * a pair without a value or a malformed key is skipped, and a record with no pair is dropped.
 */
export function usagePreferences(records: readonly GroupRecord[]): UsagePreference[] {
  const out: UsagePreference[] = [];
  for (const { key, value } of records) {
    if (out.length >= MAX_PREFERENCES) break;
    if (key !== 'content-signal' && key !== 'content-usage') continue;
    let rest = value.trim();
    let path: string | null = null;
    if (rest.startsWith('/')) {
      const space = rest.search(/\s/);
      path = space < 0 ? rest : rest.slice(0, space);
      rest = space < 0 ? '' : rest.slice(space + 1);
    }
    const values: Record<string, string> = {};
    let count = 0;
    for (const item of rest.split(',')) {
      if (count >= MAX_VALUES) break;
      const [pair = ''] = item.split(';');
      const eq = pair.indexOf('=');
      if (eq < 0) continue;
      const name = pair.slice(0, eq).trim().toLowerCase();
      const setting = pair
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .toLowerCase();
      if (!KEY.test(name) || setting === '' || Object.hasOwn(values, name)) continue;
      values[name] = setting.slice(0, 200);
      count++;
    }
    if (count > 0) out.push({ record: key, path, values });
  }
  return out;
}
