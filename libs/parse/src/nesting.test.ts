import { describe, expect, it } from 'vitest';
import { flattenForExtraction, nestingExceeds } from './nesting.js';

const pad = (html: string): string => html + ' '.repeat(100); // past the short-input shortcut

describe('nestingExceeds', () => {
  it.each([
    ['flat markup', '<p>a</p><p>b</p><div>c</div>'.repeat(10), false],
    ['unclosed nesting elements', '<div>'.repeat(11), true],
    ['exactly at the cap', '<div>'.repeat(10), false],
    ['closed elements do not accumulate', '<div></div>'.repeat(50), false],
    ['errs high: a close tag ends only the latest of its name', '<div><b></div>'.repeat(11), true],
    ['stray close tags do not reduce depth', ('<div></x>').repeat(11), true],
    ['void elements do not nest', '<br><img src=x><input><meta><link>'.repeat(10), false],
    ['unclosed p, li, td are closed by their next sibling', '<p>a<li>b<td>c<tr><dd>'.repeat(20), false],
    ['tags in comments do not count', '<!--' + '<div>'.repeat(50) + '-->', false],
    ['tags in script do not count', '<script>' + 'if (a<b) x<y;'.repeat(50) + '</script>', false],
    ['tags in uppercase script do not count', '<SCRIPT>' + '<div>'.repeat(50) + '</Script>', false],
    ['tags in style, textarea, title, xmp do not count', ['style', 'textarea', 'title', 'xmp'].map((t) => `<${t}>${'<div>'.repeat(20)}</${t}>`).join(''), false],
    ['case-insensitive names', '<DIV><div></Div></DIV>'.repeat(20), false],
    ['not a tag', '< div>a <3 b<<>'.repeat(20), false],
  ])('%s → %s', (_name, html, expected) => {
    expect(nestingExceeds(pad(html), 10)).toBe(expected);
  });

  it('short input is never flagged', () => {
    expect(nestingExceeds('<div>'.repeat(5), 10)).toBe(false);
  });
});

describe('flattenForExtraction', () => {
  it('keeps the extracted tags in order and closes each anchor', () => {
    const flat = flattenForExtraction(
      '<div><div><title>T</title><base href="/b/"><a href="/1" rel=nofollow><span>x</span>'
      + '<abbr>no</abbr><area href="/2"><link rel=canonical href="/c"><meta name=robots content=none><A HREF="/3">',
    );
    expect(flat).toBe(
      '<title>T</title><base href="/b/"><a href="/1" rel=nofollow></a><area href="/2">'
      + '<link rel=canonical href="/c"><meta name=robots content=none><A HREF="/3"></a>',
    );
  });

  it('is linear on a run of unterminated tags', () => {
    const started = performance.now();
    expect(flattenForExtraction('<a '.repeat(2_000_000))).toBe('');
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
