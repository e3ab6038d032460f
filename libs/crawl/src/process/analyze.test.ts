import { simhash, simhashWithWords } from '@trawl/dedup';
import { countWords } from '@trawl/parse';
import { describe, expect, it } from 'vitest';
import { analyzePage } from './analyze.js';

// ASCII letters, digits, apostrophes, punctuation and whitespace; the typographic breaks SimHash's
// fast path admits; and characters that send a text down its Unicode path (accents, CJK, marks, emoji).
const FAST = ['a', 'B', 'z', '0', '9', "'", '\u2019', ' ', ' ', '\n', '.', ',', '-', '(', '_', '\u00a0', '\u2014', '\u201c', '\u201d', '\u00a9', '\u00b7', '\u2026', '\u00ad'];
const SLOW = ['\u00e9', '\u4e2d', '\u3042', '\u0301', '\u{1f600}', '\uff21', '\u00b2'];

let seed = 11;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = (from: readonly string[]) => from[Math.floor(random() * from.length)] as string;
const text = (length: number, slow: number) => Array.from({ length }, () => (random() < slow ? pick(SLOW) : pick(FAST))).join('');

describe('simhashWithWords: the words of its fast path are the words countWords counts', () => {
  it('gives countWords\' count for every text it splits, and its fingerprint is simhash\'s', () => {
    let counted = 0;
    for (let n = 0; n < 5000; n++) {
      const sample = text(Math.floor(random() * 40), n % 3 === 0 ? 0.05 : 0);
      const result = simhashWithWords(sample);
      expect(result.fingerprint, JSON.stringify(sample)).toBe(simhash(sample));
      if (result.words === null) continue;
      counted++;
      expect(result.words, JSON.stringify(sample)).toBe(countWords(sample));
    }
    // Most samples take the fast path, and the others do not claim a count.
    expect(counted).toBeGreaterThan(1500);
    expect(simhashWithWords('caf\u00e9 au lait').words).toBeNull();
  });
});

describe('analyzePage', () => {
  const page = (body: string) => ({ body: Buffer.from(`<html><body><article>${body}</article></body></html>`), charset: 'utf-8', url: 'https://example.test/a', maxLinks: 100, productToken: 'trawl' });

  it('counts and fingerprints the text as countWords and simhash do, on either path', () => {
    for (const body of ['<p>Don\u2019t stop \u2014 it\u2019s 42 o\'clock.</p><p>Second &amp; last.</p>', '<p>Caf\u00e9 \u4e2d\u6587 words here</p>', '<p>   </p>']) {
      const analysis = analyzePage(page(body));
      const { text, wordCount } = analysis.parsed.text;
      expect(wordCount).toBe(countWords(text));
      expect(analysis.simhash).toBe(wordCount > 0 ? simhash(text) : null);
    }
  });
});
