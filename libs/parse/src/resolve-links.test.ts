import { describe, expect, it } from 'vitest';
import { parseHtml } from './parse-html.js';
import { resolveLinks } from './resolve-links.js';

const resolve = (html: string, pageUrl = 'http://example.com/dir/page.html'): string[] =>
  resolveLinks(parseHtml(html), pageUrl).urls.map((u) => u.url);

describe('resolveLinks', () => {
  it.each([
    ['relative path', '<a href="other.html">', ['http://example.com/dir/other.html']],
    ['root-relative', '<a href="/top">', ['http://example.com/top']],
    ['dot segments', '<a href="../up/./x">', ['http://example.com/up/x']],
    ['protocol-relative', '<a href="//cdn.example.org/a">', ['http://cdn.example.org/a']],
    ['query only', '<a href="?q=1">', ['http://example.com/dir/page.html?q=1']],
    ['fragment is kept (the caller normalizes)', '<a href="#top">', ['http://example.com/dir/page.html#top']],
    ['absolute https', '<a href="https://other.example/x">', ['https://other.example/x']],
    ['uppercase scheme', '<a href="HTTP://Example.COM/A">', ['http://example.com/A']],
    ['empty href is the page itself', '<a href="">', ['http://example.com/dir/page.html']],
  ])('%s', (_name, html, expected) => {
    expect(resolve(html)).toEqual(expected);
  });

  it.each([
    ['relative base', '<base href="/sub/"><a href="x">', ['http://example.com/sub/x']],
    ['relative base without slash', '<base href="../b"><a href="x">', ['http://example.com/x']],
    ['absolute base', '<base href="https://cdn.example/assets/"><a href="x">', ['https://cdn.example/assets/x']],
    ['base without href is ignored', '<base target="_top"><a href="x">', ['http://example.com/dir/x']],
    ['two bases: the first wins', '<base href="/one/"><base href="/two/"><a href="x">', ['http://example.com/one/x']],
    ['base applies to links before it', '<a href="x"><base href="/late/">', ['http://example.com/late/x']],
    ['fragment-only href follows the base', '<base href="http://other.example/p"><a href="#f">', ['http://other.example/p#f']],
    ['javascript: base falls back to the page', '<base href="javascript:alert(1)"><a href="x">', ['http://example.com/dir/x']],
    ['unparseable base falls back to the page', '<base href="http://[bad"><a href="x">', ['http://example.com/dir/x']],
  ])('base: %s', (_name, html, expected) => {
    expect(resolve(html)).toEqual(expected);
  });

  it('drops non-http schemes and unparseable links, and counts them', () => {
    const html = [
      '<a href="mailto:a@b.c">', '<a href="javascript:void(0)">', '<a href="tel:+123">',
      '<a href="data:text/html,hi">', '<a href="ftp://files.example/x">', '<a href="file:///etc/passwd">',
      '<a href="http://exa mple.com/">', '<a href="http://[::1">', '<a href="https://ok.example/">',
    ].join('');
    const { urls, dropped } = resolveLinks(parseHtml(html), 'http://example.com/');
    expect(urls).toEqual([{ url: 'https://ok.example/', nofollow: false }]);
    expect(dropped).toBe(8);
  });

  it('keeps rel=nofollow and folds in meta robots nofollow', () => {
    const links = '<a href="/a" rel="nofollow"><a href="/b">';
    expect(resolveLinks(parseHtml(links), 'http://e.com/').urls).toEqual([
      { url: 'http://e.com/a', nofollow: true },
      { url: 'http://e.com/b', nofollow: false },
    ]);
    const noFollowPage = parseHtml(`<meta name="robots" content="nofollow">${links}`);
    expect(resolveLinks(noFollowPage, 'http://e.com/').urls.every((u) => u.nofollow)).toBe(true);
  });

  it('an unparseable page URL still resolves absolute links', () => {
    const { urls, dropped } = resolveLinks(parseHtml('<a href="/rel"><a href="http://abs.example/">'), 'not a url');
    expect(urls).toEqual([{ url: 'http://abs.example/', nofollow: false }]);
    expect(dropped).toBe(1);
  });
});
