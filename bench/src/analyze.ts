import { loadConfig } from '@trawl/config';
import { analyzePage } from '@trawl/crawl/analyze';
import { simhash } from '@trawl/dedup';
import { candidatesFromLinks, policyFromConfig, resolvePolicy } from '@trawl/model';
import { decodeHtml, parsePage, resolveLinks } from '@trawl/parse';
import { mulberry32 } from '@trawl/testweb';
import { fmt, machine, table } from './report.js';

/**
 * CPU per page of page analysis (what the process stage's analysis thread does for every HTML
 * page): decoding, the parse with link and text extraction, and the SimHash of the text, each
 * timed on its own over realistic pages generated here (deterministically: the same pages on
 * every run). Prints; BENCHMARKS.md is left to the crawl-level cases. The cuts and their
 * figures are kept in docs/perf-log.md.
 */

const SYLLABLES = ['ka', 'lo', 'mi', 'ster', 'an', 'ri', 'ton', 'ver', 'el', 'dra', 'pen', 'us', 'qui', 'sol', 'ment', 'or', 'ba', 'ly'];

/** A vocabulary of `n` word-like strings, a few with apostrophes and capitals. */
function vocabulary(rand: () => number, n: number): string[] {
  const words: string[] = [];
  for (let i = 0; i < n; i++) {
    let word = '';
    const syllables = 1 + Math.floor(rand() * 3);
    for (let s = 0; s < syllables; s++) word += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
    if (rand() < 0.03) word += "'s";
    if (rand() < 0.05) word = word[0]?.toUpperCase() + word.slice(1);
    words.push(word);
  }
  return words;
}

/**
 * A page like a news or blog article: a head with title, description, canonical, robots meta,
 * a stylesheet and scripts; a site header with navigation, one article of ~2,200 words in
 * paragraphs with inline links and entities, a sidebar of related links, a cookie banner and a
 * footer. About 30 KB, ~55 links.
 */
export function realisticPage(seed: number): { url: string; html: string } {
  const rand = mulberry32(seed);
  const words = vocabulary(rand, 600);
  const word = (): string => words[Math.floor(rand() * words.length)] ?? 'x';
  const sentence = (): string => {
    const n = 6 + Math.floor(rand() * 14);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(word());
    const s = parts.join(' ');
    return `${s[0]?.toUpperCase()}${s.slice(1)}${rand() < 0.1 ? ' &amp; more' : ''}.`;
  };
  const host = `site${seed % 97}.test`;
  const url = `https://${host}/articles/${seed}/story.html`;
  const nav = Array.from({ length: 12 }, (_, i) => `<li><a href="/section/${i}">${word()}</a></li>`).join('');
  const related = Array.from({ length: 8 }, (_, i) => `<li><a href="/articles/${seed + i + 1}/story.html">${sentence()}</a></li>`).join('');
  const footer = Array.from({ length: 10 }, (_, i) => `<a href="${i % 3 === 0 ? `https://other${i}.test/` : `/about/${i}`}"${i % 4 === 0 ? ' rel="nofollow noopener"' : ''}>${word()}</a>`).join(' | ');
  const paragraphs: string[] = [];
  let count = 0;
  let links = 0;
  while (count < 2200) {
    const sentences: string[] = [];
    const n = 3 + Math.floor(rand() * 4);
    for (let i = 0; i < n; i++) {
      let s = sentence();
      if (links < 25 && rand() < 0.15) {
        s = `${s} See <a href="${rand() < 0.5 ? '../' : '/'}topic/${word()}?ref=${links}">${word()} ${word()}</a>.`;
        links++;
      }
      if (rand() < 0.1) s = `<em>${s}</em>`;
      sentences.push(s);
      count += s.split(' ').length;
    }
    const p = `<p class="article-body__paragraph" data-block-id="${seed}-${paragraphs.length}" data-track="article-paragraph-impression" style="margin-bottom: 1.2em">${sentences.join(' ')}</p>`;
    paragraphs.push(rand() < 0.08 ? `<h2 class="article-body__heading" id="h-${paragraphs.length}">${sentence()}</h2>\n${p}` : p);
  }
  const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${sentence()} | ${host}</title>
<meta name="description" content="${sentence()}">
<meta name="robots" content="index, follow">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="canonical" href="${url}">
<link rel="stylesheet" href="/assets/site.css">
<style>${Array.from({ length: 40 }, (_, i) => `.c${i} .item-${i} > a:hover { color: #${(i * 4099).toString(16).padStart(6, '0').slice(0, 6)}; margin: ${i}px auto; }`).join('\n')}</style>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle","headline":"${word()} ${word()}","keywords":[${Array.from({ length: 40 }, () => `"${word()}"`).join(',')}]}</script>
<script>window.dataLayer = window.dataLayer || []; function gtag(){ dataLayer.push(arguments); } gtag('js', new Date());</script>
</head>
<body class="article-page">
<svg style="display:none" xmlns="http://www.w3.org/2000/svg">${Array.from({ length: 12 }, (_, i) => `<symbol id="icon-${i}" viewBox="0 0 24 24"><path d="M${i} 2l${i + 3} 7h7l-6 4 2 7-6-4-6 4 2-7-6-4h7z"/></symbol>`).join('')}</svg>
<header class="site-header"><a href="/" class="logo">${host}</a>
<nav class="main-nav"><ul>${nav}</ul></nav>
<form class="search" action="/search"><input name="q" placeholder="Search"><button>Go</button></form>
</header>
<main>
<article>
<header><h1>${sentence()}</h1><p class="byline">By ${word()} ${word()}, <time datetime="2026-01-0${seed % 9}">January</time></p></header>
${paragraphs.join('\n')}
</article>
<aside class="sidebar"><h3>Related</h3><ul>${related}</ul></aside>
</main>
<div class="cookie-banner" id="cookie-consent">We use cookies. <a href="/privacy">Privacy</a> <button>OK</button></div>
<footer class="site-footer"><p>${footer}</p><p>&copy; 2026 ${host}</p></footer>
<script src="/assets/app.js" async></script>
</body>
</html>
`;
  return { url, html };
}

/** Median of a list of numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** CPU ms per call of `fn` over every input, `passes` times through them: the median of `rounds` timings. */
export function msPer<T>(inputs: readonly T[], fn: (input: T) => unknown, rounds: number, passes: number): { median: number; min: number } {
  let sink = 0;
  for (const input of inputs) sink += fn(input) === undefined ? 0 : 1; // warm-up: compile every path
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // CPU time, not wall time: the machine is shared, and a busy neighbour must not count.
    const start = process.cpuUsage();
    for (let p = 0; p < passes; p++) for (const input of inputs) sink += fn(input) === undefined ? 0 : 1;
    const used = process.cpuUsage(start);
    times.push((used.user + used.system) / 1000 / (inputs.length * passes));
  }
  if (sink < 0) console.log(sink);
  return { median: median(times), min: Math.min(...times) };
}

export async function analyzeBench(rounds = 7): Promise<void> {
  const PAGES = 40;
  const PASSES = 5;
  const pages = Array.from({ length: PAGES }, (_, i) => realisticPage(1000 + i));
  const bodies = pages.map((page) => ({ ...page, body: Buffer.from(page.html, 'utf8') }));
  const parsed = pages.map((page) => parsePage(page.html, page.url, { maxLinks: 5000, productToken: 'trawl' }));
  const texts = parsed.map((p) => p.text.text);

  const sizes = pages.map((p) => p.html.length / 1024);
  const words = parsed.map((p) => p.text.wordCount);
  const links = parsed.map((p) => p.page.links.length);

  const decode = msPer(bodies, (b) => decodeHtml(b.body, 'utf-8'), rounds, PASSES);
  const parse = msPer(
    pages,
    (page) => {
      const { page: parsedPage, text } = parsePage(page.html, page.url, { maxLinks: 5000, productToken: 'trawl' });
      return [resolveLinks(parsedPage, page.url), text];
    },
    rounds,
    PASSES,
  );
  const fingerprint = msPer(texts, (text) => simhash(text), rounds, PASSES);
  // Discovery of the links the analysis found (normalize, scope, traps, extension, fingerprint), on the main thread.
  const pageLinks = parsed.map((p, i) => ({ url: (pages[i] as { url: string }).url, links: resolveLinks(p.page, (pages[i] as { url: string }).url).urls }));
  const policy = resolvePolicy(policyFromConfig(loadConfig({ env: { TRAWL_SCOPE: 'domain' } }), pages.map((p) => p.url)));
  const source = { hash: Buffer.alloc(16), depth: 1 };
  const counters = { add: () => undefined };
  const now = Date.now();
  const discovery = msPer(pageLinks, (page) => candidatesFromLinks(page.links, { ...source, url: page.url }, policy, counters, now), rounds, PASSES);
  const whole = msPer(bodies, (b) => analyzePage({ body: b.body, charset: 'utf-8', url: b.url, maxLinks: 5000, productToken: 'trawl' }), rounds, PASSES);

  const md = `## Page analysis, CPU per page

Command: \`npm run bench -- analyze\` (BENCH_ROUNDS=${rounds}). ${machine()}

${PAGES} generated article pages (${fmt(median(sizes), 1)} KB median, ${fmt(median(words))} words of main text, ${fmt(median(links))} links),
each timed ${PASSES} times per round; the median (and best) round of ${rounds}, CPU ms per page
(process.cpuUsage, so garbage collection on helper threads counts):
${table(
  ['step', 'median ms', 'best ms'],
  [
    ['decode (decodeHtml)', fmt(decode.median, 3), fmt(decode.min, 3)],
    ['parse + extract (parsePage + resolveLinks)', fmt(parse.median, 3), fmt(parse.min, 3)],
    ['SimHash of the text', fmt(fingerprint.median, 3), fmt(fingerprint.min, 3)],
    ['whole analysis (analyzePage)', fmt(whole.median, 3), fmt(whole.min, 3)],
    ['discovery of its links (candidatesFromLinks, scope domain)', fmt(discovery.median, 3), fmt(discovery.min, 3)],
  ],
)}`;
  console.log(md);
}
