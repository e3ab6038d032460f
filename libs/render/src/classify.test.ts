import { describe, expect, it } from 'vitest';
import { DEFAULT_CLASSIFIER_SETTINGS, needsRendering, pageSignals } from './classify.js';

const URL_ = 'https://shop.example/';
const prose = (words: number): string => Array.from({ length: words }, (_, i) => `word${i % 37}`).join(' ');

/** A create-react-app shell: nothing but a mount point and a bundle. */
const SPA_SHELL = `<!doctype html><html><head><title>Shop</title><script defer src="/static/js/main.3f2a.js"></script>
<link rel="stylesheet" href="/static/css/main.css"></head><body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div></body></html>`;

/** A server-rendered article whose "related" links come only from an inline script. */
const HYBRID = `<!doctype html><html><head><title>News</title></head><body><nav><a href="/">Home</a> <a href="/world">World</a></nav>
<article><h1>Headline</h1><p>${prose(400)}</p><p>See <a href="/world/1">the first report</a>.</p></article>
<ul id="related"></ul>
<script>
  const related = ${JSON.stringify(['/world/7', '/world/8', '/world/9', '/sport/3'])};
  document.getElementById('related').innerHTML = related.map((p) => '<li><a href="' + p + '">' + p + '</a></li>').join('');
</script></body></html>`;

/** Plain HTML with the usual analytics snippet: scripts, but none that builds the page. */
const PLAIN = `<!doctype html><html><head><title>Docs</title>
<script async src="https://www.googletagmanager.com/gtag/js?id=G-1"></script>
<script>window.dataLayer = window.dataLayer || []; function gtag(){dataLayer.push(arguments);} gtag('js', new Date()); gtag('config', 'G-1');</script>
</head><body><div id="app"><header><a href="/">Docs</a> <a href="/guide">Guide</a> <a href="/api">API</a></header>
<main><h1>Getting started</h1><p>${prose(300)}</p><p><a href="/guide/install">Install</a>, then <a href="/guide/config">configure</a>.</p></main></div>
</body></html>`;

const NO_SCRIPT = `<html><body><div id="root"></div></body></html>`;

describe('needsRendering', () => {
  it.each([
    ['an SPA shell (empty #root, a bundle)', SPA_SHELL, URL_, true, 'empty-app-root'],
    ['a hybrid page whose related links come from an inline script', HYBRID, URL_, true, 'script-builds-links'],
    ['plain HTML whose only scripts are another host\'s analytics tag and its inert set-up', PLAIN, URL_, false, 'inert-scripts'],
    ['plain HTML with its own script too', PLAIN.replace('</head>', '<script src="/menu.js"></script></head>'), URL_, false, 'plain-html'],
    ['plain HTML with a tag manager snippet (it reaches the document)', PLAIN.replace('</head>', "<script>(function(w,d,s){var j=d.createElement(s);d.head.appendChild(j)})(window,document,'script');</script></head>"), URL_, false, 'plain-html'],
    ['an SPA shell whose bundle is on a CDN: nothing would run', SPA_SHELL.replace('/static/js/main.3f2a.js', 'https://cdn.example/main.3f2a.js'), URL_, false, 'inert-scripts'],
    ['a page without scripts, even with an empty root', NO_SCRIPT, URL_, false, 'no-scripts'],
    ['a Next.js mount point left empty', '<body><div id="__next"></div><script src="/_next/main.js"></script></body>', URL_, true, 'empty-app-root'],
    ['a Nuxt mount point with only a comment', `<body><div id="__nuxt"><!-- ssr off --></div><script src="/_nuxt/app.js"></script><p>${prose(100)}</p></body>`, URL_, true, 'empty-app-root'],
    ['a server-rendered Next.js page (root full)', `<body><div id="__next"><p>${prose(200)}</p><a href="/a">a</a></div><script src="/_next/main.js"></script></body>`, URL_, false, 'plain-html'],
    ['a hash-bang URL', PLAIN.replace('</head>', '<script src="/app.js"></script></head>'), 'https://shop.example/#!/item/3', true, 'hashbang-url'],
    ['near-empty text with a script', '<body><h1>Loading…</h1><script src="/app.js"></script></body>', URL_, true, 'near-empty-text'],
    ['a noscript asking for JavaScript on a page with text', `<body><p>${prose(200)}</p><noscript><p>Please <b>enable JavaScript</b> in your browser.</p></noscript><script src="/a.js"></script></body>`, URL_, true, 'noscript-hint'],
    [
      'a large page that is mostly script with almost no links',
      `<body><p>${prose(60)}</p><a href="/one">one</a><script>var state = ${JSON.stringify({ blob: 'x'.repeat(40_000) })};</script><script src="/app.js"></script></body>`,
      URL_,
      true,
      'few-links',
    ],
    [
      'JSON islands are data, not scripts',
      `<body><p>${prose(5)}</p><script type="application/ld+json">{"@type":"Article"}</script></body>`,
      URL_,
      false,
      'no-scripts',
    ],
  ])('%s', (_name, html, url, render, reason) => {
    const decision = needsRendering(html, url);
    expect({ render: decision.render, reason: decision.reason }).toEqual({ render, reason });
  });

  it('counts other hosts\' scripts as runnable when the renderer loads them', () => {
    const withOtherHosts = { ...DEFAULT_CLASSIFIER_SETTINGS, otherHostScripts: true };
    expect(needsRendering(PLAIN, URL_, withOtherHosts).reason).toBe('plain-html');
    expect(needsRendering(SPA_SHELL.replace('/static/js/main.3f2a.js', 'https://cdn.example/main.3f2a.js'), URL_, withOtherHosts).reason).toBe('empty-app-root');
    expect(pageSignals(PLAIN, URL_)).toMatchObject({ scripts: 2, externalScripts: 1, otherHostScripts: 1, activeInlineScripts: 0 });
  });

  it('counts what it decided from', () => {
    const signals = pageSignals(HYBRID);
    expect(signals.links).toBe(3); // nav 2 + the article's 1; the script's markup is not a link yet
    expect(signals.scripts).toBe(1);
    expect(signals.emptyRoot).toBeNull();
    expect(signals.textChars).toBeGreaterThan(2000);
    expect(pageSignals(SPA_SHELL)).toMatchObject({ links: 0, emptyRoot: 'root', noscriptHint: true, scripts: 1 });
  });

  it('ignores links that lead nowhere', () => {
    expect(pageSignals('<body><a href="#top">t</a><a href="javascript:void(0)">j</a><a href=/x>x</a><!-- <a href="/c">c</a> --></body>').links).toBe(1);
  });
});
