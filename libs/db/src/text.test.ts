import { describe, expect, it } from 'vitest';
import { storableText, storableTextOrNull } from './text.js';

describe('storableText', () => {
  it.each<[string, string, string]>([
    ['plain ASCII is unchanged', 'http://a.example/p/1', 'http://a.example/p/1'],
    ['a NUL inside is dropped', 'http://a.example/p/1\u0000tail', 'http://a.example/p/1tail'],
    ['every NUL is dropped', '\u0000a\u0000\u0000b\u0000', 'ab'],
    ['only NULs leave the empty string', '\u0000\u0000', ''],
    ['a lone high surrogate becomes U+FFFD', 'a\uD83Db', 'a\uFFFDb'],
    ['a lone low surrogate becomes U+FFFD', 'a\uDE00b', 'a\uFFFDb'],
    ['a high surrogate at the end becomes U+FFFD', 'ab\uD83D', 'ab\uFFFD'],
    ['a low surrogate at the start becomes U+FFFD', '\uDE00ab', '\uFFFDab'],
    ['two high surrogates in a row: both lone', '\uD83D\uD83D', '\uFFFD\uFFFD'],
    ['reversed pair: both lone', '\uDE00\uD83D', '\uFFFD\uFFFD'],
    ['a valid pair (emoji) is kept', 'smile \uD83D\uDE00 ok', 'smile 😀 ok'],
    ['a lone surrogate before a valid pair', '\uD83D\uD83D\uDE00', '\uFFFD😀'],
    ['NUL between the halves of a pair leaves the pair whole', '\uD83D\u0000\uDE00', '😀'],
    ['non-Latin text is kept', 'Grüße, 東京, Привет', 'Grüße, 東京, Привет'],
    ['U+FFFD itself is kept', 'x\uFFFDy', 'x\uFFFDy'],
    ['the empty string is unchanged', '', ''],
  ])('%s', (_name, input, expected) => {
    const out = storableText(input);
    expect(out).toBe(expected);
    expect(out.includes('\u0000')).toBe(false);
    // Well-formed: survives a UTF-8 round trip unchanged.
    expect(Buffer.from(out, 'utf8').toString('utf8')).toBe(out);
  });

  it('keeps null and maps undefined to null', () => {
    expect(storableTextOrNull(null)).toBeNull();
    expect(storableTextOrNull(undefined)).toBeNull();
    expect(storableTextOrNull('a\u0000')).toBe('a');
  });
});
