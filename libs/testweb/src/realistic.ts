/**
 * Pages of the realistic profile: a head with a style block, a header with the host's navigation,
 * an article (title, dateline, an introduction of its own, then sections of headings and
 * paragraphs with links in the text), a list of related links and the host's footer, padded with
 * paragraphs to the size the profile draws for the page.
 *
 * Cheap to serve: the paragraphs beyond a page's introduction come from a pool generated once
 * per seed, so a request costs picking pool entries and joining strings, not generating text.
 * Two pages share few pool paragraphs (a 30 KB page takes about 60 of 8,192), so their text
 * stays unlike, as text extraction and near-duplicate detection need.
 */
import type { Link, WebModel } from './model.js';
import { contentHost, pageSpec } from './model.js';
import type { PageProfile } from './profile.js';
import { pageSizeBytes } from './profile.js';
import { hashInts, mulberry32, pick } from './prng.js';
import type { OriginOf } from './render.js';
import { anchorText, baseHref, escapeHtml, hrefOf } from './render.js';
import { article, headline, pageTitle, paragraphText, topicWords } from './text.js';

const POOL_PARAGRAPHS = 8192;
/** Paragraphs of one pool topic: neighbouring pool entries read like one text. */
const POOL_TOPIC_RUN = 16;
const INTRO_WORDS = 120;
/** Paragraphs per section, at most. */
const SECTION_PARAGRAPHS = 6;
const STREAM_POOL = 0x9001;
const STREAM_BODY = 0xb0d7;
const STREAM_SITE = 0x517e;

/** A seed's paragraphs, each also in one string (newline after each) so a run of them is one slice. */
export interface ParagraphPool {
  readonly paragraphs: readonly string[];
  readonly text: string;
  /** Where paragraph i starts in `text`; one more entry for the end. */
  readonly offsets: readonly number[];
}

const pools = new Map<number, ParagraphPool>();

/** The seed's paragraph pool: `<p>` elements of HTML-escaped text, generated on first use and kept. */
export function paragraphPool(seed: number): ParagraphPool {
  let pool = pools.get(seed);
  if (pool === undefined) {
    const random = mulberry32(hashInts(seed, STREAM_POOL));
    const paragraphs: string[] = [];
    const offsets = [0];
    let topic: string[] = [];
    for (let i = 0; i < POOL_PARAGRAPHS; i++) {
      if (i % POOL_TOPIC_RUN === 0) topic = topicWords(random);
      const paragraph = `<p>${escapeHtml(paragraphText(random, topic))}</p>`;
      paragraphs.push(paragraph);
      offsets.push((offsets[i] as number) + paragraph.length + 1);
    }
    pool = Object.freeze({ paragraphs: Object.freeze(paragraphs), text: `${paragraphs.join('\n')}\n`, offsets: Object.freeze(offsets) });
    pools.set(seed, pool);
  }
  return pool;
}

/** A host's site name: two capitalized words, the same on all its pages. */
function siteName(seed: number, host: number): string {
  return headline(mulberry32(hashInts(seed, host, STREAM_SITE))).replace(/\b\w/g, (c) => c.toUpperCase());
}

// A constant style block, as real pages carry (text extraction must skip it).
const STYLE =
  'body{margin:0;font:16px/1.5 Georgia,serif;color:#222;background:#fff}.site-header{display:flex;align-items:center;gap:2rem;padding:.5rem 1rem;border-bottom:1px solid #ddd}' +
  '.brand{font-weight:700;font-size:1.25rem}.main-nav ul,.site-footer ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:1rem}' +
  'main{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,1fr);gap:2rem;max-width:72rem;margin:0 auto;padding:1rem}article h1{font-size:2.25rem;line-height:1.2}' +
  '.dateline{color:#666;font-size:.875rem}.related{font-size:.875rem}.related ul{padding-left:1rem}.site-footer{padding:2rem 1rem;background:#f4f4f4;font-size:.875rem}' +
  '@media (max-width:48rem){main{grid-template-columns:1fr}.site-header{flex-direction:column}}';

/** Where a host of the `typical` scripts profile serves its own behaviour script. */
export const SITE_SCRIPT_PATH = '/static/site.js';

/**
 * The site's behaviour script, as a theme ships it: a menu toggle for small screens, anchors on
 * the article's sections, a class on the header once the page scrolls. It adds no link and no
 * text beyond the toggle's label.
 */
export const SITE_SCRIPT =
  '(function(){"use strict";var header=document.querySelector(".site-header"),nav=document.querySelector(".main-nav");\n' +
  'if(header&&nav){var toggle=document.createElement("button");toggle.type="button";toggle.className="menu-toggle";toggle.textContent="Menu";\n' +
  'toggle.setAttribute("aria-expanded","false");toggle.addEventListener("click",function(){var open=nav.classList.toggle("open");toggle.setAttribute("aria-expanded",String(open));});\n' +
  'header.insertBefore(toggle,nav);}\n' +
  'Array.prototype.forEach.call(document.querySelectorAll("article h2"),function(h,i){if(!h.id)h.id="section-"+(i+1);});\n' +
  'window.addEventListener("scroll",function(){if(header)header.classList.toggle("scrolled",window.scrollY>40);},{passive:true});})();\n';

/**
 * The `<head>` scripts of the `typical` profile: an analytics tag from another host (`.invalid`:
 * it never resolves), its inline set-up, the page's JSON-LD and the site's own script.
 */
function typicalScripts(title: string, date: string): string {
  const tag = 'G-TRAWL0001';
  const ld = JSON.stringify({ '@context': 'https://schema.org', '@type': 'Article', headline: title, datePublished: date }).replace(/</g, '\\u003c');
  return (
    `<script async src="https://tags.analytics.invalid/gtag/js?id=${tag}"></script>` +
    `<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments);}gtag('js',new Date());gtag('config','${tag}');</script>` +
    `<script type="application/ld+json">${ld}</script><script defer src="${SITE_SCRIPT_PATH}"></script>`
  );
}

const LINK_LEADS = ['See', 'Read more in', 'Compare', 'More on this in', 'As covered in', 'Related:'];

function anchor(model: WebModel, spec: ReturnType<typeof pageSpec>, link: Link, originOf: OriginOf): string {
  const rel = link.kind === 'nofollow' ? ` rel="${link.rel}"` : '';
  return `<a href="${escapeHtml(hrefOf(model, spec, link, originOf))}"${rel}>${escapeHtml(anchorText(model, link, true))}</a>`;
}

/** `<li>`, `</li>` and the newline around a listed link. */
const LIST_ITEM_BYTES = 10;
const items = (anchors: readonly string[]): string => anchors.map((a) => `<li>${a}</li>`).join('\n');

/** The HTML of a page of the realistic profile at a version. A mirror renders its original's bytes. */
export function renderRealisticPage(model: WebModel, servedHost: number, page: number, originOf: OriginOf, profile: PageProfile, version: number): string {
  const host = contentHost(model, servedHost);
  const spec = pageSpec(model, host, page);
  const seed = model.seed;
  const target = pageSizeBytes(profile, seed, host, page);
  const random = mulberry32(hashInts(seed, host, page, version, STREAM_BODY));
  const title = escapeHtml(pageTitle(seed, host, page));
  const site = escapeHtml(siteName(seed, host));

  const nav: string[] = [];
  const footer: string[] = [];
  const inText: string[] = [];
  const listed: string[] = [];
  for (const link of spec.links) {
    const html = anchor(model, spec, link, originOf);
    if (link.kind === 'page' && link.region === 'nav') nav.push(html);
    else if (link.kind === 'page' && link.region === 'footer') footer.push(html);
    else if (link.kind === 'page') inText.push(html);
    else listed.push(html);
  }
  const base = baseHref(spec, originOf);
  const intro = article(seed, host, page, version, INTRO_WORDS);
  const head =
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${title} | ${site}</title>${base === null ? '' : `<base href="${escapeHtml(base)}">`}` +
    `<meta name="description" content="${escapeHtml((intro.paragraphs[0]?.[0] ?? []).join(' '))}"><style>${STYLE}</style>` +
    `${profile.scripts === 'typical' ? typicalScripts(title, intro.date) : ''}</head>\n<body>\n` +
    `<header class="site-header"><span class="brand">${site}</span>\n<nav class="main-nav" aria-label="Main"><ul>\n${items(nav)}\n</ul></nav>\n</header>\n` +
    `<main>\n<article>\n<h1>${title}</h1>\n<p class="dateline">Published ${intro.date} · ${intro.views} views</p>\n`;
  const foot =
    `<footer class="site-footer"><ul>\n${items(footer)}\n</ul>\n<p class="legal">© ${intro.date.slice(0, 4)} ${site}. ` +
    `All rights reserved. Reproduction in whole or in part without permission is prohibited.</p></footer>\n</body>\n</html>\n`;

  // Body links go into the text, one or two per paragraph, the rest into the related list.
  const parts: string[] = [];
  // The links' own bytes count wherever they end up (in the text or in the related list).
  let length = head.length + foot.length + [...inText, ...listed].reduce((sum, a) => sum + a.length + LIST_ITEM_BYTES, 100);
  let next = 0;
  /** A `<p>…</p>` with one or two body links added at its end, while any are left. */
  const withLinks = (paragraph: string): string => {
    if (next >= inText.length) return paragraph;
    const take = Math.min(inText.length - next, 1 + pick(random, 2));
    const anchors = inText.slice(next, next + take);
    next += take;
    // Counted up front as list items: they are counted again with the paragraph.
    length -= anchors.reduce((sum, a) => sum + a.length + LIST_ITEM_BYTES, 0);
    return `${paragraph.slice(0, -'</p>'.length)} ${LINK_LEADS[pick(random, LINK_LEADS.length)]} ${anchors.join(' and ')}.</p>`;
  };
  const push = (html: string): void => {
    parts.push(html);
    length += html.length + 1;
  };
  for (const paragraph of intro.paragraphs) push(withLinks(`<p>${escapeHtml(paragraph.map((s) => s.join(' ')).join(' '))}</p>`));
  const pool = paragraphPool(seed);
  let sectionLeft = 0;
  let at = 0;
  while (length < target) {
    if (sectionLeft === 0) {
      push(`<h2>${escapeHtml(headline(random))}</h2>`);
      sectionLeft = 2 + pick(random, SECTION_PARAGRAPHS - 1);
      // A section is a run of neighbouring pool paragraphs: they share a topic, as a section keeps to its subject.
      at = pick(random, pool.paragraphs.length - SECTION_PARAGRAPHS);
    }
    if (next < inText.length) {
      push(withLinks(pool.paragraphs[at] as string));
      at += 1;
      sectionLeft -= 1;
      continue;
    }
    // No links left to place: the rest of the section is one slice of the pool's text.
    let count = 0;
    while (count < sectionLeft && length < target) {
      length += (pool.paragraphs[at + count] as string).length + 1;
      count += 1;
    }
    parts.push(pool.text.slice(pool.offsets[at], pool.offsets[at + count]));
    at += count;
    sectionLeft -= count;
  }
  const related = [...inText.slice(next), ...listed];
  const aside = related.length === 0 ? '' : `<aside class="related"><h2>Related</h2><ul>\n${items(related)}\n</ul></aside>\n`;
  return `${head}${parts.join('\n')}\n</article>\n${aside}</main>\n${foot}`;
}
