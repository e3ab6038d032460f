import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseHtml } from './parse-html.js';

const hrefs = (html: string): string[] => parseHtml(html).links.map((l) => l.href);

describe('parseHtml links', () => {
  it.each([
    ['plain anchors in document order', '<a href="/a">a</a><p><a href="/b">b</a></p>', ['/a', '/b']],
    ['area inside map', '<map><area href="/x" shape="rect"></map><a href="/y">y</a>', ['/x', '/y']],
    ['anchors without href are skipped', '<a name="top">t</a><a>none</a><a href="/z">z</a>', ['/z']],
    ['href is trimmed', '<a href="  /t \n">t</a>', ['/t']],
    ['entities are decoded', '<a href="/s?a=1&amp;b=2&#38;c=3">s</a>', ['/s?a=1&b=2&c=3']],
    ['unquoted and single-quoted values', "<a href=/u>u</a><a href='/q'>q</a>", ['/u', '/q']],
    ['uppercase tags and attributes', '<A HREF="/up">u</A><AREA HREF="/ar">', ['/up', '/ar']],
    ['duplicates removed, first position kept', '<a href="/d">1</a><a href="/e">2</a><a href="/d">3</a>', ['/d', '/e']],
    ['nested inline markup', '<div><span><b><a href="/deep">x</a></b></span></div>', ['/deep']],
    ['links inside comments are ignored', '<!-- <a href="/hidden">h</a> --><a href="/shown">s</a>', ['/shown']],
    ['links inside script text are ignored', '<script>var s = "<a href=\'/js\'>";</script><a href="/real">r</a>', ['/real']],
    ['empty href is kept raw (it resolves to the base)', '<a href="">self</a>', ['']],
    ['non-http schemes are still raw links here', '<a href="mailto:x@y.z">m</a><a href="javascript:void(0)">j</a>', ['mailto:x@y.z', 'javascript:void(0)']],
    ['link[href] is not an outlink', '<link rel="stylesheet" href="/s.css"><a href="/p">p</a>', ['/p']],
  ])('%s', (_name, html, expected) => {
    expect(hrefs(html)).toEqual(expected);
  });

  it.each([
    ['nofollow', true],
    ['NoFollow', true],
    ['external nofollow', true],
    ['noopener\tnofollow\nnoreferrer', true],
    ['ugc', false],
    ['sponsored', false],
    ['ugc sponsored', false],
    ['nofollowme', false],
    ['', false],
  ])('rel="%s" → nofollow %s', (rel, nofollow) => {
    expect(parseHtml(`<a href="/x" rel="${rel}">x</a>`).links).toEqual([{ href: '/x', nofollow }]);
  });

  it('a link both followed and nofollowed elsewhere on the page counts as followed', () => {
    const page = parseHtml('<a href="/x" rel="nofollow">1</a><a href="/x">2</a><a href="/y" rel="nofollow">3</a><a href="/y" rel="nofollow">4</a>');
    expect(page.links).toEqual([
      { href: '/x', nofollow: false },
      { href: '/y', nofollow: true },
    ]);
  });

  it('caps links at maxLinks and says so', () => {
    const html = Array.from({ length: 10 }, (_, i) => `<a href="/p${i}">${i}</a>`).join('');
    const capped = parseHtml(html, { maxLinks: 4 });
    expect(capped.links.map((l) => l.href)).toEqual(['/p0', '/p1', '/p2', '/p3']);
    expect(capped.linksTruncated).toBe(true);
    expect(parseHtml(html, { maxLinks: 10 }).linksTruncated).toBe(false);
    expect(parseHtml(html).links).toHaveLength(10);
  });

  it('duplicates do not count against maxLinks', () => {
    const page = parseHtml('<a href="/a">1</a><a href="/a">2</a><a href="/b">3</a>', { maxLinks: 2 });
    expect(page.links.map((l) => l.href)).toEqual(['/a', '/b']);
    expect(page.linksTruncated).toBe(false);
  });
});

describe('parseHtml head', () => {
  it.each([
    ['absent', '<a href="/x">x</a>', null],
    ['relative', '<head><base href="/sub/dir/"></head>', '/sub/dir/'],
    ['absolute', '<base href="https://cdn.example/">', 'https://cdn.example/'],
    ['without href is ignored', '<base target="_blank"><base href="/second/">', '/second/'],
    ['two bases: the first wins', '<base href="/first/"><base href="/second/">', '/first/'],
    ['empty href counts', '<base href=""><base href="/second/">', ''],
    ['in the body too (browsers accept it)', '<body><base href="/late/"></body>', '/late/'],
  ])('base href %s', (_name, html, expected) => {
    expect(parseHtml(html).baseHref).toBe(expected);
  });

  it.each([
    ['canonical', '<link rel="canonical" href="/c">', '/c'],
    ['case and token list', '<link rel="Alternate CANONICAL" href=" /c2 ">', '/c2'],
    ['first one wins', '<link rel="canonical" href="/one"><link rel="canonical" href="/two">', '/one'],
    ['other rels ignored', '<link rel="alternate" href="/alt"><link rel="canonicalx" href="/x">', null],
    ['empty href ignored', '<link rel="canonical" href=""><link rel="canonical" href="/real">', '/real'],
  ])('canonical: %s', (_name, html, expected) => {
    expect(parseHtml(html).canonical).toBe(expected);
  });

  it.each([
    ['no meta', '', { noindex: false, nofollow: false }],
    ['noindex', '<meta name="robots" content="noindex">', { noindex: true, nofollow: false }],
    ['nofollow, uppercase', '<meta name="ROBOTS" content="NOFOLLOW">', { noindex: false, nofollow: true }],
    ['both, comma list', '<meta name="robots" content="noindex, nofollow">', { noindex: true, nofollow: true }],
    ['none means both', '<meta name="robots" content="None">', { noindex: true, nofollow: true }],
    ['space separated', '<meta name="robots" content="noindex nofollow">', { noindex: true, nofollow: true }],
    ['index, follow', '<meta name="robots" content="index, follow">', { noindex: false, nofollow: false }],
    ['our product token', '<meta name="trawl" content="nofollow">', { noindex: false, nofollow: true }],
    ['other crawlers are not us', '<meta name="googlebot" content="noindex, nofollow">', { noindex: false, nofollow: false }],
    ['several metas combine', '<meta name="robots" content="noindex"><meta name="Trawl" content="nofollow">', { noindex: true, nofollow: true }],
    ['without content', '<meta name="robots">', { noindex: false, nofollow: false }],
  ])('meta robots: %s', (_name, html, expected) => {
    expect(parseHtml(`<html><head>${html}</head><body></body></html>`).metaRobots).toEqual(expected);
  });

  it('meta robots: a configured product token replaces ours', () => {
    const html = '<html><head><meta name="mybot" content="noindex"><meta name="trawl" content="nofollow"></head></html>';
    expect(parseHtml(html, { productToken: 'MyBot' }).metaRobots).toEqual({ noindex: true, nofollow: false });
  });

  it('title: first one, whitespace collapsed, capped', () => {
    expect(parseHtml('<title>\n  Hello\t &amp; welcome  </title><title>second</title>').title).toBe('Hello & welcome');
    expect(parseHtml('<title>   </title>').title).toBeNull();
    expect(parseHtml('<p>no title</p>').title).toBeNull();
    expect(parseHtml(`<title>${'x'.repeat(5000)}</title>`).title).toHaveLength(1024);
  });
});

describe('parseHtml on garbage', () => {
  const empty = {
    links: [],
    linksTruncated: false,
    baseHref: null,
    canonical: null,
    metaRobots: { noindex: false, nofollow: false },
    title: null,
    tooDeep: false,
  };

  it('empty input', () => {
    expect(parseHtml('')).toEqual(empty);
  });

  it.each([
    ['unterminated attribute', '<a href="/x'],
    ['unterminated tag', '<a href=/x'],
    ['stray brackets', '<<<>>><</>><a <b <c'],
    ['unterminated comment', '<!-- <a href="/x">'],
    ['unterminated script', '<script><a href="/x">'],
    ['NUL and control characters', '\u0000<a\u0000 href="/\u0001">\u0000</a>'],
    ['lone surrogates', '<a href="/\uD800">\uDC00</a>'],
    ['broken entities', '<a href="/&amp;&#xZZ;&#99999999;&bogus;">x</a>'],
    ['mismatched nesting', '<b><i><a href="/x"></b></i></a></table></p>'],
    ['xml declaration and cdata', '<?xml version="1.0"?><![CDATA[<a href="/c">]]><a href="/d">'],
  ])('%s does not throw', (_name, html) => {
    expect(() => parseHtml(html)).not.toThrow();
  });

  it('binary junk does not throw', () => {
    for (let i = 0; i < 50; i++) {
      const junk = randomBytes(4096).toString('latin1');
      expect(() => parseHtml(junk)).not.toThrow();
      const utf8Junk = randomBytes(4096).toString('utf8');
      expect(() => parseHtml(utf8Junk)).not.toThrow();
    }
  });

  it('unclosed tags still yield their links', () => {
    expect(hrefs('<a href="/one">one<a href="/two">two<p><a href="/three">')).toEqual(['/one', '/two', '/three']);
  });
});

describe('parseHtml on size and depth', () => {
  it('parses a ~30 KB page', () => {
    let html = '<!doctype html><html><head><title>Catalogue</title><base href="/shop/">'
      + '<link rel="canonical" href="https://example.com/shop/"><meta name="robots" content="index,follow">'
      + '<style>.x<y{}</style><script>for (var i = 0; i < n; i++) { if (a<b) go(); }</script></head><body>';
    let count = 0;
    while (html.length < 30_000) {
      html += `<div class="item"><h2>Item ${count}</h2><p>Some text about item ${count}, with <b>bold</b> `
        + `and <i>italic</i> words.</p><a href="item/${count}?ref=list&amp;page=1"${count % 5 === 0 ? ' rel="nofollow"' : ''}>`
        + `Item ${count}</a><img src="/img/${count}.png" alt=""></div>\n`;
      count++;
    }
    html += '</body></html>';
    expect(html.length).toBeGreaterThanOrEqual(30_000);

    const page = parseHtml(html);
    expect(page.links).toHaveLength(count);
    expect(page.links[0]).toEqual({ href: 'item/0?ref=list&page=1', nofollow: true });
    expect(page.links[1]).toEqual({ href: 'item/1?ref=list&page=1', nofollow: false });
    expect(page.title).toBe('Catalogue');
    expect(page.baseHref).toBe('/shop/');
    expect(page.canonical).toBe('https://example.com/shop/');
    expect(page.tooDeep).toBe(false);
  });

  it('markup nested deeper than the cap takes the flat fallback, quickly', () => {
    const html = '<title>Deep</title>' + '<div>'.repeat(200_000)
      + '<a href="/deep" rel="nofollow">d</a><a href="/deeper">e</a><meta name="robots" content="noindex">';
    const started = performance.now();
    const page = parseHtml(html);
    expect(performance.now() - started).toBeLessThan(2_000); // a tree parse took ~28 s
    expect(page.tooDeep).toBe(true);
    expect(page.title).toBe('Deep');
    expect(page.links).toEqual([
      { href: '/deep', nofollow: true },
      { href: '/deeper', nofollow: false },
    ]);
    expect(page.metaRobots.noindex).toBe(true);
  });

  it('deep nesting followed by stray close tags is bounded too', () => {
    const html = '<div>'.repeat(1_000) + '</x>'.repeat(1_000_000);
    const started = performance.now();
    expect(parseHtml(html).tooDeep).toBe(true);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('ordinary sloppy markup is not mistaken for deep nesting', () => {
    const rows = Array.from({ length: 2_000 }, (_, i) => `<tr><td><a href="/r${i}">r</a><td>x<p>para<li>item`).join('');
    const page = parseHtml(`<table>${rows}</table>`);
    expect(page.tooDeep).toBe(false);
    expect(page.links).toHaveLength(2_000);
  });

  it('the nesting cap is an option', () => {
    const html = '<span>'.repeat(50) + '<a href="/x">x</a>' + ' '.repeat(200);
    expect(parseHtml(html, { maxNestingDepth: 20 }).tooDeep).toBe(true);
    expect(parseHtml(html, { maxNestingDepth: 20 }).links).toEqual([{ href: '/x', nofollow: false }]);
    expect(parseHtml(html).tooDeep).toBe(false);
  });
});
