import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanLines, countWords, extractText, WORDS } from './extract-text.js';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe('extractText', () => {
  it('keeps the content of a boilerplate-heavy page and drops the furniture', () => {
    const page = extractText(fixture('boilerplate-heavy.html'), 'https://library.example/visit/hours');
    expect(page.text).toBe(
      [
        'Opening hours',
        'The library is open from nine in the morning until eight in the evening, Monday to Saturday.',
        'On Sundays the reading room opens at noon & closes at five.',
        'Holidays: closed',
        'Exam weeks: open until midnight',
      ].join('\n'),
    );
    for (const furniture of ['cookies', 'Books', 'Search', 'Home', 'Share', 'Hidden', 'Invisible', 'sidebar', 'Subscribe', 'Privacy', 'JavaScript', 'script text', 'tracking']) {
      expect(page.text).not.toContain(furniture);
    }
    expect(page.title).toBe('Opening hours of the city library');
    expect(page.description).toBe('When the city library is open, and how to reach it.');
    expect(page.language).toBe('en-gb');
    expect(page.languageSource).toBe('html');
    expect(page.canonical).toBe('https://library.example/hours');
    expect(page.wordCount).toBe(37);
  });

  it('takes the text of the one <article>, with its headline, without its footer or the related links', () => {
    const page = extractText(fixture('article.html'), 'https://journal.example/danube');
    expect(page.text).toBe(
      [
        'Along the Danube',
        'By A. Writer',
        'The Danube flows through ten countries before it reaches the Black Sea.',
        'The river at dawn.',
        'Cycling its banks takes about six weeks at an easy pace.',
      ].join('\n'),
    );
    expect(page.description).toBe('A journey along the Danube.');
    expect(page.language).toBe('en');
    expect(page.languageSource).toBe('meta');
    expect(page.canonical).toBeNull();
  });

  it('reads a listing of several articles from <main>', () => {
    const page = extractText(fixture('listing.html'), 'https://news.example/');
    expect(page.text).toBe(['Premier titre', 'Le premier article du jour.', 'Second titre', 'Le second article du jour.'].join('\n'));
    expect(page.language).toBe('fr');
  });

  it('falls back to role="main", then to <body>', () => {
    expect(extractText('<body><div>menu text</div><div role="main"><p>Main part</p></div></body>', 'http://x.example/').text).toBe('Main part');
    expect(extractText('<p>Just a fragment</p><nav>links</nav>', 'http://x.example/').text).toBe('Just a fragment');
  });

  it('separates blocks with line breaks and keeps inline text together', () => {
    const page = extractText('<body><p>one <b>bo</b>ld</p><div>two<br>three</div><table><tr><td>a</td><td>b</td></tr></table>x&nbsp;&nbsp;y</body>', 'http://x.example/');
    expect(page.text).toBe('one bold\ntwo\nthree\na\nb\nx y');
    expect(page.wordCount).toBe(8);
  });

  it.each([
    ['<html lang="de-DE"><body>x</body></html>', 'de-de', 'html'],
    ['<html lang="english"><body><p>short</p></body></html>', null, null],
    ['<html><head><meta http-equiv="content-language" content="pt_BR"></head><body>x</body></html>', 'pt-br', 'meta'],
    [
      '<html><body><p>Le renard brun rapide saute par-dessus le chien paresseux, puis il court dans la forêt profonde pour retrouver ses petits.</p></body></html>',
      'fr',
      'detected',
    ],
    [
      '<html><body><p>Der schnelle braune Fuchs springt über den faulen Hund und läuft danach weiter in den dunklen Wald hinein.</p></body></html>',
      'de',
      'detected',
    ],
    ['<html><body><p>Too short.</p></body></html>', null, null],
  ])('language of %s → %s (%s)', (html, language, source) => {
    const page = extractText(html, 'http://x.example/');
    expect(page.language).toBe(language);
    expect(page.languageSource).toBe(source);
  });

  it('strips NUL bytes, control characters and lone surrogates from every string', () => {
    const bad = 'A\u0000B\uD800C\uDC00D\u0007E \uD83D\uDE00';
    const page = extractText(
      `<html lang="en"><head><title>${bad}</title><meta name="description" content="${bad}"><link rel="canonical" href="/p${bad}"></head><body><p>${bad}</p>&#0;</body></html>`,
      'http://x.example/',
    );
    for (const value of [page.title, page.description, page.text, page.canonical ?? '']) {
      // eslint-disable-next-line no-control-regex -- looking for control characters
      expect(value).not.toMatch(/[\u0000-\u0008]/);
      expect(value).not.toMatch(LONE_SURROGATE);
    }
    expect(page.title).toBe('ABCDE \uD83D\uDE00'); // a valid pair (an emoji) is kept
    expect(page.text.startsWith('ABCDE \uD83D\uDE00')).toBe(true);
  });

  it('never throws, whatever it is given', () => {
    const inputs: unknown[] = ['', '<<<>>>', '<html', '</div></div></body>', '\uD800', '<p>unterminated <b>bold', null, undefined, 42];
    for (const input of inputs) {
      expect(() => extractText(input as string, 'not a url')).not.toThrow();
    }
    expect(extractText('', 'http://x.example/')).toEqual({ title: null, description: null, language: null, languageSource: null, canonical: null, text: '', wordCount: 0 });
    expect(extractText('<link rel=canonical href="javascript:alert(1)">', 'http://x.example/').canonical).toBeNull();
  });

  it('reads pathologically deep markup with the flat fallback, in linear time', () => {
    const html = `<html><head><title>Deep</title></head><body>${'<div>'.repeat(50_000)}<p>Buried text &amp; more</p><script>no()</script></body></html>`;
    const page = extractText(html, 'http://x.example/');
    expect(page.title).toBe('Deep');
    expect(page.text).toBe('Buried text & more');
  });

  it('strips hostile flat markup in linear time (unterminated tags, comments, scripts)', () => {
    const deep = '<div>'.repeat(1000);
    for (const tail of ['<script>'.repeat(100_000), '<title'.repeat(100_000), '<!--'.repeat(100_000), '< '.repeat(100_000)]) {
      const page = extractText(`${deep}<p>kept</p>${tail}`, 'http://x.example/');
      expect(page.text.startsWith('kept')).toBe(true);
    }
  });

  it('caps the text of a huge page', () => {
    const page = extractText(`<body>${'<p>word word word word</p>'.repeat(20_000)}</body>`, 'http://x.example/', { maxTextChars: 1000 });
    expect(page.text.length).toBeLessThanOrEqual(1000);
    expect(page.wordCount).toBeGreaterThan(150);
  });
});

describe('countWords', () => {
  // Letters of several scripts, digits, marks, CJK, apostrophes, spaces, punctuation, an emoji
  // (a surrogate pair), an astral letter, a lone surrogate.
  const alphabet = ['a', 'Z', '7', ' ', '\n', "'", '\u2019', '.', '-', '\u00e9', '\u0301', '\u0436', '\u05d0', '\u4e2d', '\u3042', '\u30a2', '\u00b7', '\u00a0', '\u{1F600}', '\u{1D400}', '\ud800', '\u00bd', '\u0663'];
  let seed = 11;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);

  it('counts what the word pattern matches, on random text of many scripts', () => {
    for (let n = 0; n < 5000; n++) {
      const text = Array.from({ length: Math.floor(random() * 30) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
      expect(countWords(text), JSON.stringify(text)).toBe(text.match(WORDS)?.length ?? 0);
    }
  });

  it('counts a contraction once and each CJK character that starts a word', () => {
    expect(countWords("don't stop \u2014 it\u2019s 9 o'clock")).toBe(5);
    expect(countWords('\u4e2d\u6587 text')).toBe(3);
    expect(countWords('abc\u4e2d\u6587')).toBe(1);
    expect(countWords('')).toBe(0);
  });
});

describe('cleanLines', () => {
  /** The definition: whitespace runs without a line break one space, with one a line break, the ends trimmed. */
  const reference = (raw: string): string => raw.replace(/[^\S\n]+/g, ' ').replace(/ ?\n[ \n]*/g, '\n').trim();
  const alphabet = ['a', 'b', ' ', ' ', '\n', '\n', '\t', '\r', '\u00a0', '\u2003', '\u3000', '\ufeff', '\u2028', '.', '\u00e9', '\u4e2d'];
  let seed = 5;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);

  it('folds whitespace as the definition does, on random text', () => {
    for (let n = 0; n < 5000; n++) {
      const text = Array.from({ length: Math.floor(random() * 25) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
      expect(cleanLines(text), JSON.stringify(text)).toBe(reference(text));
    }
  });

  it('returns clean text as it is', () => {
    expect(cleanLines('one line\nand another')).toBe('one line\nand another');
    expect(cleanLines('  padded \n\n  twice  ')).toBe('padded\ntwice');
    expect(cleanLines(' \n\t ')).toBe('');
  });
});
