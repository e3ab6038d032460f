import { describe, expect, it } from 'vitest';
import { toMarkdown } from './markdown.js';

const URL_ = 'https://example.com/docs/page.html';
const md = (body: string, options?: Parameters<typeof toMarkdown>[2]) => toMarkdown(`<!doctype html><html><body>${body}</body></html>`, URL_, options);

describe('toMarkdown', () => {
  it.each([
    ['headings h1–h6', '<h1>One</h1><h2>Two</h2><h4>Four <small>sub</small></h4><h6>Six</h6>', '# One\n\n## Two\n\n#### Four sub\n\n###### Six'],
    ['paragraphs, whitespace folded', '<p>  a\n  b  </p><p>c&nbsp;d</p>', 'a b\n\nc d'],
    ['emphasis keeps spaces outside', '<p>x<strong> bold </strong>y <em>it</em> <del>gone</del></p>', 'x **bold** y *it* ~~gone~~'],
    ['inline code with a backtick', '<p>run <code>a`b</code> and <code>npm ci</code></p>', 'run ``a`b`` and `npm ci`'],
    ['line break', '<p>one<br>two</p>', 'one\\\ntwo'],
    ['blockquote', '<blockquote><p>a</p><p>b</p></blockquote>', '> a\n>\n> b'],
    ['horizontal rule', '<p>a</p><hr><p>b</p>', 'a\n\n---\n\nb'],
    ['bare text in a div between blocks', '<div>lead<p>para</p>tail</div>', 'lead\n\npara\n\ntail'],
  ])('%s', (_name, html, expected) => {
    expect(md(html)).toBe(expected);
  });

  it('nests lists, tight, numbered from start', () => {
    const html = '<ul><li>a<ul><li>a1</li><li>a2<ol start="3"><li>x</li><li>y</li></ol></li></ul></li><li><p>b</p><p>b2</p></li></ul>';
    expect(md(html)).toBe('- a\n  - a1\n  - a2\n    3. x\n    4. y\n- b\n\n  b2');
  });

  it('puts a list nested straight in a list under the item before it', () => {
    expect(md('<ol><li>one</li><ul><li>sub</li></ul><li>two</li></ol>')).toBe('1. one\n   - sub\n2. two');
  });

  it('fences code with the language its class names', () => {
    expect(md('<pre><code class="language-ts">const a = 1;\n\nif (a) {\n  b();\n}\n</code></pre>')).toBe('```ts\nconst a = 1;\n\nif (a) {\n  b();\n}\n```');
    expect(md('<div class="highlight-source-python"><pre>print(1)</pre></div>')).toBe('```python\nprint(1)\n```');
    expect(md('<pre>has ``` inside</pre>')).toBe('````\nhas ``` inside\n````');
    expect(md('<pre><code>&lt;b&gt; *not* _md_</code></pre>')).toBe('```\n<b> *not* _md_\n```');
  });

  it('writes GFM pipe tables, header row from thead or the first row', () => {
    const html = '<table><caption>Sizes</caption><thead><tr><th>Name</th><th>Size</th></tr></thead><tbody><tr><td>a|b</td><td>1<br>KB</td></tr><tr><td colspan="2">both</td></tr></tbody></table>';
    expect(md(html)).toBe('Sizes\n\n| Name | Size |\n| --- | --- |\n| a\\|b | 1 KB |\n| both |  |');
    expect(md('<table><tr><th>Weight</th><td>2 kg</td></tr><tr><th>Colour</th><td>red</td></tr></table>')).toBe('| Weight | 2 kg |\n| --- | --- |\n| Colour | red |');
  });

  it('keeps columns aligned under cells that span rows', () => {
    const html = '<table><tr><th rowspan="2">How</th><th colspan="2">Fee</th></tr><tr><th>Adult</th><th>Child</th></tr><tr><td>Online</td><td>88</td><td>57</td></tr></table>';
    expect(md(html)).toBe('| How | Fee |  |\n| --- | --- | --- |\n|  | Adult | Child |\n| Online | 88 | 57 |');
  });

  it('reads layout tables as blocks', () => {
    expect(md('<table role="presentation"><tr><td><h2>Title</h2><p>Text.</p></td><td><p>More.</p></td></tr></table>')).toBe('## Title\n\nText.\n\nMore.');
  });

  it('makes links absolute against <base href> and the page URL, drops in-page and script links', () => {
    const html = '<p><a href="../a b(1).html">rel</a> <a href="#top">top</a> <a href="javascript:void(0)">js</a> <a href="mailto:x@example.com">mail</a> <a href="/x"></a></p>';
    expect(md(html)).toBe('[rel](<https://example.com/a%20b(1).html>) top js [mail](mailto:x@example.com)');
    const based = toMarkdown('<html><head><base href="/v2/"></head><body><p><a href="guide">g</a></p></body></html>', URL_);
    expect(based).toBe('[g](https://example.com/v2/guide)');
  });

  it('drops images, or gives their alt text, or links them', () => {
    const html = '<p>see <img src="/i.png" alt="a chart"> here</p>';
    expect(md(html)).toBe('see here');
    expect(md(html, { images: 'alt' })).toBe('see a chart here');
    expect(md(html, { images: 'link' })).toBe('see ![a chart](https://example.com/i.png) here');
  });

  it('escapes text that would read as Markdown, lightly', () => {
    expect(md('<p># not a heading</p><p>1. not a list</p><p>a * b and snake_case and _x_ and <code>_ok_</code></p><p>&lt;div&gt; [1] [a](b)</p>')).toBe(
      '\\# not a heading\n\n1\\. not a list\n\na \\* b and snake_case and \\_x\\_ and `_ok_`\n\n\\<div> [1] \\[a](b)',
    );
  });

  it('keeps the one article, drops furniture around and inside it', () => {
    const html = `<header><nav><a href="/">Home</a></nav></header><div class="cookie-banner">We use cookies</div>
      <article><header><h1>Headline</h1></header><p>Body text.</p><aside>Pull quote</aside><form><input></form><script>x()</script><footer>Share</footer></article>
      <aside>Related</aside><footer>© site</footer>`;
    expect(md(html)).toBe('# Headline\n\nBody text.');
  });

  it('takes <main> when several articles make a listing', () => {
    expect(md('<nav>menu</nav><main><h1>Posts</h1><article><h2>A</h2></article><article><h2>B</h2></article></main><footer>f</footer>')).toBe('# Posts\n\n## A\n\n## B');
  });

  it('without article or main, chooses the densest block and widens it to its headline', () => {
    const para = (n: number) => `<p>Sentence number ${n}, with commas, and enough words to count as a paragraph of text.</p>`;
    const html = `<div id="top"><div class="links"><a href="/1">One link</a> <a href="/2">Two link</a></div></div>
      <div id="wrap"><div id="content"><h1>Title</h1><div class="body">${para(1)}${para(2)}${para(3)}</div></div>
      <div class="links2"><p><a href="/a">A long list of links that is not the content at all</a></p></div></div>`;
    const out = md(html);
    expect(out.startsWith('# Title\n\nSentence number 1')).toBe(true);
    expect(out).not.toContain('One link');
    expect(out).not.toContain('not the content');
  });

  it('never throws and gives its best on broken markup', () => {
    for (const html of ['', '<', '<table><tr><td>a<td>b<tr><td>c', '<ul><li>a<li>b</ul></ul></div>', '<p>a<b>b<i>c</p>d', '\u0000<p>\uD800x</p>', '<pre>']) {
      expect(() => toMarkdown(html, 'not a url')).not.toThrow();
    }
    expect(toMarkdown('<table><tr><td>a<td>b<tr><td>c', URL_)).toBe('| a | b |\n| --- | --- |\n| c |  |');
    expect(toMarkdown('<p>x</p>', 'not a url')).toBe('x');
  });

  it('reads markup nested past the cap as plain text', () => {
    const html = `<body>${'<div>'.repeat(3000)}<p>deep text</p></body>`;
    expect(toMarkdown(html, URL_, { maxNestingDepth: 512 })).toBe('deep text');
  });

  it('cuts at a paragraph break past maxChars', () => {
    expect(md('<p>aaaa</p><p>bbbb</p><p>cccc</p>', { maxChars: 12 })).toBe('aaaa\n\nbbbb');
  });
});

/** mulberry32: the same random markup on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TAGS = ['p', 'div', 'span', 'a', 'em', 'strong', 'code', 'br', 'hr', 'ul', 'ol', 'li', 'table', 'thead', 'tr', 'td', 'th', 'caption', 'pre', 'blockquote', 'h1', 'h3', 'article', 'main', 'nav', 'aside', 'footer', 'header', 'img', 'dl', 'dt', 'dd', 'base', 'script', 'form', 'details', 'summary', 'sup'];
const ATTRIBUTES = ['href="/x y"', 'href="#a"', 'href="javascript:x()"', 'href="//other.example/p"', 'href="http://[bad"', 'src="/i.png"', 'alt="a [b] *c*"', 'colspan="0"', 'colspan="99999"', 'rowspan="3"', 'rowspan="-1"', 'start="x"', 'start="7"', 'class="language-ts"', 'class="cookie"', 'role="presentation"', 'role="main"', 'hidden'];
const TEXTS = ['word', '*star*', '_under_', '`tick`', '| pipe |', '# hash', '1. one', '> quote', '<b>', '&lt;i&gt;', '\u0000nul', '\uE000pua', '\uD800lone', '\u0001ctl', '  ', '\n\n', '[x](y)', '東京', '```'];

function randomMarkup(seed: number): string {
  const rand = random(seed);
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const out: string[] = [];
  const open: string[] = [];
  for (let i = 0, steps = 20 + Math.floor(rand() * 150); i < steps; i++) {
    const r = rand();
    if (r < 0.45) {
      const tag = pick(TAGS);
      out.push(`<${tag}${Array.from({ length: Math.floor(rand() * 3) }, () => ` ${pick(ATTRIBUTES)}`).join('')}>`);
      open.push(tag);
    } else if (r < 0.65 && open.length > 0) out.push(`</${open.pop()}>`);
    else if (r < 0.7) out.push(`</${pick(TAGS)}>`);
    else out.push(pick(TEXTS));
  }
  return out.join(rand() < 0.5 ? '' : '\n');
}

describe('toMarkdown on random markup', () => {
  it('on 1,000 random markups: never throws, and leaves no control characters, lone surrogates or markers', () => {
    for (let seed = 1; seed <= 1000; seed++) {
      const html = randomMarkup(seed);
      for (const images of ['drop', 'link'] as const) {
        const out = toMarkdown(html, 'https://site.example/dir/page.html', { images });
        expect(typeof out, `seed ${seed}`).toBe('string');
        // eslint-disable-next-line no-control-regex -- finding control characters is the point
        expect(out, `seed ${seed}`).not.toMatch(/[\u0000-\u0008\u000B-\u001F\u007F\uE000]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
      }
    }
  });
});
