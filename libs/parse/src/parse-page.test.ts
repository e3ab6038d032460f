import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractText } from './extract-text.js';
import { parseHtml } from './parse-html.js';
import { parsePage } from './parse-page.js';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('parsePage', () => {
  const cases: [string, string, string][] = [
    ['boilerplate-heavy page', fixture('boilerplate-heavy.html'), 'https://library.example/visit/hours'],
    ['article', fixture('article.html'), 'https://journal.example/danube'],
    ['listing', fixture('listing.html'), 'https://news.example/'],
    ['fragment with links', '<p>Just <a href="/a" rel="nofollow">a</a> <a href="b">fragment</a></p><nav><a href="/c">c</a></nav>', 'http://x.example/d/'],
    ['robots meta and base', '<head><base href="/sub/"><meta name="robots" content="noindex"><title> T </title></head><body><a href="x">x</a>words here</body>', 'http://x.example/'],
    ['deeply nested markup (flat fallback)', `<title>deep</title>${'<div>'.repeat(2000)}<a href="/deep">deep link</a> text`, 'http://x.example/'],
    ['empty', '', 'http://x.example/'],
  ];
  it.each(cases)('gives what parseHtml and extractText give, from one parse: %s', (_name, html, url) => {
    const options = { maxLinks: 100, productToken: 'trawl' };
    const both = parsePage(html, url, options);
    expect(both.page).toEqual(parseHtml(html, options));
    expect(both.text).toEqual(extractText(html, url));
  });

  it('takes the flat fallback for both halves of a page nested past the cap', () => {
    const both = parsePage(`<title>deep</title>${'<div>'.repeat(2000)}<a href="/deep">deep link</a> some text`, 'http://x.example/');
    expect(both.page.tooDeep).toBe(true);
    expect(both.page.links).toEqual([{ href: '/deep', nofollow: false }]);
    expect(both.text.text).toContain('deep link some text');
    expect(both.text.title).toBe('deep');
  });
});
