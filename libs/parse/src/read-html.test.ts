import { readFileSync } from 'node:fs';
import { load, type CheerioAPI } from 'cheerio';
import { franc } from 'franc-min';
import { iso6393To1 } from 'iso-639-3/iso6393-to-1.js';
import { describe, expect, it } from 'vitest';
import type { ExtractedText, ExtractTextOptions } from './extract-text.js';
import { DEFAULT_MAX_NESTING_DEPTH, flattenForExtraction, nestingExceeds } from './nesting.js';
import type { ExtractedLink, MetaRobots, ParsedPage, ParseHtmlOptions } from './parse-html.js';
import { parsePage } from './parse-page.js';

/*
 * The DOM walk the streaming pass replaced (cheerio's htmlparser2 DOM, walked in document order),
 * kept here verbatim as the reference: the pass must give the very same links, metadata and text
 * on every page.
 */
const DEFAULT_MAX_LINKS = 5000;
const MAX_TITLE_CHARS = 1024;
const DEFAULT_PRODUCT_TOKEN = 'trawl';
const ASCII_WHITESPACE = /[\t\n\f\r ]+/;
const DEFAULT_MAX_TEXT_CHARS = 200_000;
const MAX_DESCRIPTION_CHARS = 1024;
const DETECT_CHARS = 2000;
const DETECT_MIN_CHARS = 50;
type DomDocument = ReturnType<CheerioAPI['root']>[number];
type DomNode = DomDocument['children'][number];
type DomElement = Extract<DomNode, { attribs: Record<string, string> }>;

/**
 * One page parsed once: the DOM that link extraction (`readPage`) and text extraction
 * (`readText` in extract-text.ts) both read. Markup nested past the cap is not parsed as a tree:
 * `root` is then the flat document of the tags link extraction needs (see
 * `flattenForExtraction`), and text extraction strips `source` in one linear pass instead.
 */
interface HtmlDocument {
  $: CheerioAPI;
  root: DomDocument | undefined;
  /** The markup as given. */
  source: string;
  tooDeep: boolean;
}

/**
 * Parses HTML with htmlparser2 (through cheerio), or, for markup nested deeper than
 * `maxNestingDepth`, the flat fallback. Never throws: htmlparser2 is a forgiving tokenizer that
 * accepts any string.
 */
function loadHtml(html: string, maxNestingDepth = DEFAULT_MAX_NESTING_DEPTH): HtmlDocument {
  const tooDeep = nestingExceeds(html, maxNestingDepth);
  // Passing an `xml` object switches cheerio 1.x to htmlparser2 (options.ts, flattenOptions
  // sets `_useHtmlParser2`); `xmlMode: false` inside it keeps HTML tokenization (void and
  // raw-text elements, lowercased names). htmlparser2 extracted links about 3.4× faster than
  // parse5 when measured on this machine's Node 20, and we never need parse5's exact tree
  // construction.
  const $ = load(tooDeep ? flattenForExtraction(html) : html, { xml: { xmlMode: false, decodeEntities: true } });
  return { $, root: $.root()[0], source: html, tooDeep };
}

/**
 * Extract what the crawl needs from one HTML page. Pure: no I/O, no URL resolution (see
 * `resolveLinks`). Never throws on garbage input: htmlparser2 is a forgiving tokenizer that
 * accepts any string, and markup nested deep enough to make it slow takes a flat fallback.
 * (`parsePage` gives this and the page's text from one parse.)
 */
function parseHtml(html: string, options: ParseHtmlOptions = {}): ParsedPage {
  if (typeof html !== 'string' || html.length === 0) return emptyPage();
  return readPage(loadHtml(html, options.maxNestingDepth), options);
}

function emptyPage(): ParsedPage {
  return { links: [], linksTruncated: false, baseHref: null, canonical: null, metaRobots: { noindex: false, nofollow: false }, title: null, tooDeep: false };
}

/** `parseHtml` on a document already loaded. */
function readPage(doc: HtmlDocument, options: ParseHtmlOptions = {}): ParsedPage {
  const maxLinks = Math.max(0, Math.floor(options.maxLinks ?? DEFAULT_MAX_LINKS));
  const robotsMetaNames = new Set(['robots', (options.productToken ?? DEFAULT_PRODUCT_TOKEN).toLowerCase()]);
  const page = emptyPage();
  page.tooDeep = doc.tooDeep;
  const { $ } = doc;
  const byHref = new Map<string, ExtractedLink>();
  for (const el of elementsInDocumentOrder(doc.root)) {
    const attribs = el.attribs;
    switch (el.name) {
      case 'a':
      case 'area': {
        const href = attribs['href']?.trim();
        if (href === undefined) break;
        const nofollow = hasToken(attribs['rel'], 'nofollow');
        const seen = byHref.get(href);
        if (seen) {
          // The same target linked twice: followed if any occurrence is followed.
          seen.nofollow &&= nofollow;
        } else if (page.links.length < maxLinks) {
          const link = { href, nofollow };
          byHref.set(href, link);
          page.links.push(link);
        } else {
          page.linksTruncated = true;
        }
        break;
      }
      case 'base':
        // HTML §4.2.3: only the first base element with an href attribute counts.
        if (page.baseHref === null && attribs['href'] !== undefined) page.baseHref = attribs['href'].trim();
        break;
      case 'link':
        if (page.canonical === null && hasToken(attribs['rel'], 'canonical')) {
          const href = attribs['href']?.trim();
          if (href) page.canonical = href;
        }
        break;
      case 'meta':
        if (robotsMetaNames.has((attribs['name'] ?? '').trim().toLowerCase())) {
          applyRobotsDirectives(page.metaRobots, attribs['content'] ?? '');
        }
        break;
      case 'title':
        if (page.title === null) {
          const title = $(el).text().replace(/\s+/g, ' ').trim().slice(0, MAX_TITLE_CHARS);
          if (title !== '') page.title = title;
        }
        break;
    }
  }
  return page;
}

/**
 * Pre-order traversal with an explicit stack. Not `$('a[href], …')`: css-select walks with
 * `Array#unshift` too, which is quadratic in depth, and the walk is no slower on normal pages.
 */
function* elementsInDocumentOrder(root: DomDocument | undefined): Generator<DomElement> {
  if (root === undefined) return;
  const stack: DomNode[] = [];
  for (let i = root.children.length - 1; i >= 0; i--) stack.push(root.children[i] as DomNode);
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (!('attribs' in node)) continue;
    yield node;
    const children = node.children;
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as DomNode);
  }
}

function hasToken(list: string | undefined, token: string): boolean {
  if (list === undefined) return false;
  return list.toLowerCase().split(ASCII_WHITESPACE).includes(token);
}

/**
 * Robots meta syntax as Google and Bing read it: comma-separated, case-insensitive, `none` =
 * `noindex, nofollow`. Whitespace also separates, since `content="noindex nofollow"` is common.
 */
function applyRobotsDirectives(robots: MetaRobots, content: string): void {
  for (const directive of content.toLowerCase().split(/[\s,]+/)) {
    if (directive === 'noindex' || directive === 'none') robots.noindex = true;
    if (directive === 'nofollow' || directive === 'none') robots.nofollow = true;
  }
}

/** Never text: scripts, styles, templates, forms and embedded objects. */
const NEVER_TEXT = new Set([
  'script', 'style', 'noscript', 'template', 'form', 'button', 'select', 'option', 'input', 'textarea',
  'iframe', 'object', 'embed', 'svg', 'canvas', 'math', 'dialog', 'head', 'title', 'meta', 'link',
]);
/** Page furniture: navigation, sidebars, site headers and footers. */
const FURNITURE = new Set(['nav', 'aside', 'menu']);
const FURNITURE_ROLES = new Set(['navigation', 'banner', 'contentinfo', 'complementary', 'search', 'menu', 'menubar', 'dialog', 'alertdialog']);
/** class / id words (split on spaces, `-` and `_`) that mark boilerplate blocks. */
const FURNITURE_WORDS = new Set([
  'nav', 'navbar', 'navigation', 'menu', 'sidebar', 'breadcrumb', 'breadcrumbs', 'cookie', 'cookies', 'consent', 'gdpr',
  'share', 'sharing', 'social', 'advert', 'advertisement', 'ads', 'promo', 'newsletter', 'popup', 'modal', 'related',
  'comments', 'disqus', 'skip',
]);
/** Elements that end a line of text. */
const BLOCK = new Set([
  'address', 'article', 'blockquote', 'body', 'br', 'caption', 'dd', 'details', 'div', 'dl', 'dt', 'fieldset', 'figcaption',
  'figure', 'footer', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'html', 'li', 'main', 'ol', 'p', 'pre', 'section',
  'summary', 'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
]);

/** NUL, other C0 controls but tab and newline, DEL, and UTF-16 surrogates without their pair. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const safe = (s: string): string => s.replace(UNSAFE, '');
const oneLine = (s: string, max: number): string | null => {
  const value = safe(s).replace(/\s+/g, ' ').trim().slice(0, max).trim();
  return value === '' ? null : value;
};

/**
 * The visible main text of a page and what it says about itself, for near-duplicate detection
 * and indexing. Pure, never throws. The text comes from `<article>` when the page has exactly
 * one, else `<main>` (or `role="main"`), else `<body>`; navigation, site headers and footers,
 * sidebars, forms, scripts and blocks whose class or id says cookie banner, share bar, menu,
 * related links… are left out. A header inside the article (its headline) is kept.
 */
function extractText(html: string, url: string, options: ExtractTextOptions = {}): ExtractedText {
  if (typeof html !== 'string' || html.length === 0) return emptyText();
  return readText(loadHtml(html, options.maxNestingDepth), url, options);
}

const emptyText = (): ExtractedText => ({ title: null, description: null, language: null, languageSource: null, canonical: null, text: '', wordCount: 0 });

/** `extractText` on a document already loaded (the one `parseHtml`'s links came from). */
function readText(doc: HtmlDocument, url: string, options: ExtractTextOptions = {}): ExtractedText {
  if (doc.source.length === 0) return emptyText();
  const maxTextChars = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS;
  try {
    if (doc.tooDeep) return flatExtract(doc.source, maxTextChars);
    const page = scan(doc.root);
    const text = visibleText(page.contentRoot ?? page.body ?? doc.root, maxTextChars);
    const declared = languageTag(page.htmlLang) ?? null;
    const meta = declared === null ? languageTag(page.metaLanguage?.split(',')[0]) : null;
    const detected = declared === null && meta === null ? detectLanguage(text) : null;
    return {
      title: page.title === null ? null : oneLine(page.title, MAX_TITLE_CHARS),
      description: page.description === null ? null : oneLine(page.description, MAX_DESCRIPTION_CHARS),
      language: declared ?? meta ?? detected,
      languageSource: declared !== null ? 'html' : meta !== null ? 'meta' : detected !== null ? 'detected' : null,
      canonical: page.canonical === null ? null : absolute(page.canonical, page.baseHref, url),
      text,
      wordCount: countWords(text),
    };
  } catch {
    return emptyText();
  }
}

interface PageScan {
  title: string | null;
  description: string | null;
  htmlLang: string | undefined;
  metaLanguage: string | undefined;
  canonical: string | null;
  baseHref: string | null;
  body: DomElement | null;
  contentRoot: DomElement | null;
}

/** One pass over the document: metadata, and where the main text lives. */
function scan(root: DomDocument | undefined): PageScan {
  const page: PageScan = { title: null, description: null, htmlLang: undefined, metaLanguage: undefined, canonical: null, baseHref: null, body: null, contentRoot: null };
  let ogDescription: string | null = null;
  const articles: DomElement[] = [];
  let main: DomElement | null = null;
  for (const el of elementsInDocumentOrder(root)) {
    const a = el.attribs;
    switch (el.name) {
      case 'html':
        page.htmlLang ??= a['lang'] ?? a['xml:lang'];
        break;
      case 'body':
        page.body ??= el;
        break;
      case 'title':
        page.title ??= textOf(el);
        break;
      case 'base':
        if (page.baseHref === null && a['href'] !== undefined) page.baseHref = a['href'].trim();
        break;
      case 'link':
        if (page.canonical === null && hasToken(a['rel'], 'canonical') && a['href']?.trim()) page.canonical = a['href'].trim();
        break;
      case 'meta': {
        const name = (a['name'] ?? a['property'] ?? '').trim().toLowerCase();
        if (name === 'description') page.description ??= a['content'] ?? null;
        else if (name === 'og:description') ogDescription ??= a['content'] ?? null;
        if ((a['http-equiv'] ?? '').trim().toLowerCase() === 'content-language') page.metaLanguage ??= a['content'];
        break;
      }
      case 'article':
        articles.push(el);
        break;
      case 'main':
        main ??= el;
        break;
      default:
        if (main === null && (a['role'] ?? '').trim().toLowerCase() === 'main') main = el;
    }
  }
  page.description ??= ogDescription;
  // One article is the page's subject; several (a listing) are not, so take <main> or <body>.
  page.contentRoot = articles.length === 1 ? (articles[0] ?? null) : main;
  return page;
}

/** The text under `root`, skipping what is never text and page furniture. */
function visibleText(root: DomDocument | DomElement | undefined, maxChars: number): string {
  if (root === undefined) return '';
  const parts: string[] = [];
  let length = 0;
  const stack: (DomNode | typeof LINE)[] = [root as DomNode];
  while (stack.length > 0 && length < maxChars) {
    const node = stack.pop();
    if (node === LINE) {
      parts.push('\n');
      continue;
    }
    if (node === undefined) continue;
    if (node.type === 'text') {
      parts.push(node.data);
      length += node.data.length;
      continue;
    }
    if (!('children' in node)) continue;
    if ('attribs' in node) {
      if (node !== root && isBoilerplate(node)) continue;
      if (BLOCK.has(node.name)) {
        parts.push('\n');
        stack.push(LINE);
      }
    }
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i] as DomNode);
  }
  const lines = safe(parts.join('').slice(0, maxChars))
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0]+/g, ' ').trim())
    .filter((line) => line !== '');
  return lines.join('\n');
}
const LINE = Symbol('line');

function isBoilerplate(el: DomElement): boolean {
  const name = el.name;
  if (NEVER_TEXT.has(name) || FURNITURE.has(name)) return true;
  const a = el.attribs;
  if (a['hidden'] !== undefined || a['aria-hidden'] === 'true') return true;
  if (/display\s*:\s*none|visibility\s*:\s*hidden/i.test(a['style'] ?? '')) return true;
  if (FURNITURE_ROLES.has((a['role'] ?? '').trim().toLowerCase())) return true;
  // The site's header and footer; an article's own header (its headline) stays.
  if ((name === 'header' || name === 'footer') && !(name === 'header' && hasAncestor(el, 'article'))) return true;
  if (name === 'body' || name === 'main' || name === 'article') return false;
  for (const word of `${a['class'] ?? ''} ${a['id'] ?? ''}`.toLowerCase().split(/[\s_-]+/)) {
    if (FURNITURE_WORDS.has(word)) return true;
  }
  return false;
}

function hasAncestor(el: DomElement, name: string): boolean {
  for (let p = el.parent; p !== null; p = p.parent) if ('name' in p && p.name === name) return true;
  return false;
}

/** A page too deeply nested to parse as a tree: strip the markup in one linear pass. */
function flatExtract(html: string, maxChars: number): ExtractedText {
  const { text: stripped, title } = stripMarkup(html);
  // A tag-free string parses flat (no nesting), which decodes the entities.
  const decoded = load(stripped.replace(/</g, '&lt;'), { xml: { xmlMode: false, decodeEntities: true } }).root().text();
  const text = safe(decoded.slice(0, maxChars))
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0]+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
  const detected = detectLanguage(text);
  return {
    title: title === null ? null : oneLine(title, MAX_TITLE_CHARS),
    description: null,
    language: detected,
    languageSource: detected === null ? null : 'detected',
    canonical: null,
    text,
    wordCount: countWords(text),
  };
}

/** Elements whose content is not markup, and never text we keep (the title is kept aside). */
const RAW_TEXT = new Set(['script', 'style', 'noscript', 'template', 'title', 'textarea', 'xmp']);

/**
 * Markup removed by hand, in time linear in the input (no backtracking regex): tags become a
 * space (a line break for block elements), comments and raw-text elements disappear, an
 * unterminated one ends the text as it would end a browser's.
 */
function stripMarkup(html: string): { text: string; title: string | null } {
  const lower = html.toLowerCase();
  const out: string[] = [];
  let title: string | null = null;
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt === -1) {
      out.push(html.slice(i));
      break;
    }
    out.push(html.slice(i, lt));
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      if (end === -1) break;
      out.push(' ');
      i = end + 3;
      continue;
    }
    const name = /^<\/?([a-z][^\s/>]{0,31})/.exec(lower.slice(lt, lt + 34))?.[1];
    if (name === undefined) {
      out.push('<');
      i = lt + 1;
      continue;
    }
    const gt = html.indexOf('>', lt);
    if (gt === -1) break;
    i = gt + 1;
    if (RAW_TEXT.has(name) && html[lt + 1] !== '/') {
      const close = lower.indexOf(`</${name}`, i);
      if (close === -1) break;
      if (name === 'title') title ??= html.slice(i, close);
      const closeEnd = html.indexOf('>', close);
      i = closeEnd === -1 ? html.length : closeEnd + 1;
      out.push(' ');
      continue;
    }
    out.push(BLOCK.has(name) ? '\n' : ' ');
  }
  return { text: out.join(''), title };
}

function textOf(el: DomElement): string {
  let out = '';
  for (const child of el.children) if (child.type === 'text') out += child.data;
  return out;
}

/** `en-US`, `en_us`, `EN` → `en-us` / `en`; anything that is not a language tag → undefined. */
function languageTag(value: string | undefined): string | null {
  const tag = value?.trim().toLowerCase().replace(/_/g, '-');
  return tag !== undefined && /^[a-z]{2,3}(-[a-z0-9]{1,8})*$/.test(tag) ? tag : null;
}

function detectLanguage(text: string): string | null {
  if (text.length < DETECT_MIN_CHARS) return null;
  const code = franc(text.slice(0, DETECT_CHARS), { minLength: DETECT_MIN_CHARS });
  if (code === 'und') return null;
  return iso6393To1[code] ?? code;
}

function absolute(href: string, baseHref: string | null, pageUrl: string): string | null {
  try {
    const base = baseHref === null ? pageUrl : new URL(baseHref, pageUrl).href;
    const resolved = new URL(safe(href), base);
    return resolved.protocol === 'http:' || resolved.protocol === 'https:' ? resolved.href : null;
  } catch {
    return null;
  }
}

/** Words as the near-duplicate tokenizer counts them: letter/digit runs, CJK characters one each. */
function countWords(text: string): number {
  return text.match(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]|[\p{L}\p{N}\p{M}]+(?:['’][\p{L}\p{N}\p{M}]+)*/gu)?.length ?? 0;
}

function referencePage(html: string, url: string, options: ParseHtmlOptions & ExtractTextOptions): { page: ParsedPage; text: ExtractedText } {
  if (html.length === 0) return { page: parseHtml(html, options), text: extractText(html, url, options) };
  const doc = loadHtml(html, options.maxNestingDepth);
  return { page: readPage(doc, options), text: readText(doc, url, options) };
}

/** mulberry32: the same random pages on every run. */
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

const TAGS = [
  'p', 'p', 'div', 'div', 'span', 'a', 'a', 'area', 'em', 'br', 'hr', 'li', 'ul', 'td', 'tr', 'table', 'h1', 'h2',
  'article', 'main', 'nav', 'aside', 'header', 'footer', 'section', 'body', 'html', 'head', 'title', 'base', 'link', 'meta',
  'script', 'style', 'noscript', 'template', 'form', 'button', 'input', 'textarea', 'svg', 'math', 'iframe', 'select', 'option',
  'img', 'pre', 'dialog', 'xmp', 'menu', 'figure', 'b',
];
const TEXTS = ['word', 'tab\there', 'cr\r\nlf', '\u2028sep', '\u3000wide', "it's a'b ''", 'naïve’s', 'Two words', ' spaced  out ', '&amp;', '&lt;b&gt;', '&nbsp;', 'caf&eacute;', '\u00a0', 'line\nbreak', "don't", '東京', '\u0001ctl', '', '  '];
const ATTRIBUTES = [
  () => 'href="/x"', () => 'href=" /a b "', () => 'href="javascript:void(0)"', () => 'href', () => 'rel="nofollow"', () => 'rel="NoFollow ugc"',
  () => 'rel="canonical"', () => 'rel="canonical stylesheet"', () => 'name="robots"', () => 'name="trawl"', () => 'name="description"',
  () => 'property="og:description"', () => 'content="noindex, nofollow"', () => 'content="none"', () => 'content="A summary"',
  () => 'http-equiv="Content-Language"', () => 'content="de-DE, en"', () => 'lang="en-GB"', () => 'xml:lang="fr"', () => 'role="main"',
  () => 'role="navigation"', () => 'role="banner"', () => 'class="cookie-banner"', () => 'class="site_nav"', () => 'id="related-links"',
  () => 'class="content"', () => 'hidden', () => 'aria-hidden="true"', () => 'style="display: none"', () => 'style="visibility:hidden"',
  () => 'href="/x"', () => 'href="https://other.example/p?q=1"',
];

/** Markup of every kind the extractors care about, nested, unclosed, stray-closed and commented at random. */
function randomMarkup(seed: number): string {
  const rand = random(seed);
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const out: string[] = [];
  const open: string[] = [];
  const steps = 20 + Math.floor(rand() * 120);
  for (let i = 0; i < steps; i++) {
    const r = rand();
    if (r < 0.4) {
      const tag = pick(TAGS);
      const attributes = Array.from({ length: Math.floor(rand() * 3) }, () => pick(ATTRIBUTES)()).join(' ');
      out.push(`<${rand() < 0.1 ? tag.toUpperCase() : tag}${attributes ? ` ${attributes}` : ''}${rand() < 0.05 ? '/' : ''}>`);
      open.push(tag);
    } else if (r < 0.6 && open.length > 0) {
      out.push(`</${open.pop()}>`);
    } else if (r < 0.65) {
      out.push(`</${pick(TAGS)}>`);
    } else if (r < 0.68) {
      out.push(rand() < 0.5 ? `<!-- ${pick(TEXTS)} <a href="/commented"> -->` : '<![CDATA[ cdata ]]>');
    } else {
      out.push(pick(TEXTS));
    }
  }
  return out.join(rand() < 0.5 ? '' : '\n');
}

/** An article page: head, navigation, one article of paragraphs with links, sidebar, footer. */
function articlePage(seed: number): string {
  const rand = random(seed);
  const word = (): string => ['river', 'stone', 'bridge', 'Danube', 'market', 'winter', 'light', 'harbour', 'café', "o'clock"][Math.floor(rand() * 10)] as string;
  const sentence = (): string => Array.from({ length: 5 + Math.floor(rand() * 12) }, word).join(' ');
  const paragraphs = Array.from({ length: 40 }, (_, i) => `<p class="body">${sentence()} <a href="/topic/${i}"${i % 5 === 0 ? ' rel="nofollow"' : ''}>${word()}</a> ${sentence()}.</p>`);
  return `<!doctype html><html lang="en"><head><title>${sentence()}</title><meta name="description" content="${sentence()}">
<link rel="canonical" href="/story/${seed}"><style>p { margin: 0 }</style><script>var x = "<p>not text</p>";</script></head>
<body><header><nav><a href="/">Home</a><a href="/news">News</a></nav></header><main><article><header><h1>${sentence()}</h1></header>
${paragraphs.join('\n')}</article><aside class="related"><a href="/other">${sentence()}</a></aside></main>
<div class="cookie-consent">Cookies <a href="/privacy">privacy</a></div><footer><a href="/about">About</a> &copy; 2026</footer></body></html>`;
}

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('the streaming pass gives what the DOM walk gave', () => {
  const url = 'https://site.example/dir/page.html';

  it('on the fixtures and generated article pages', () => {
    const pages = [fixture('article.html'), fixture('boilerplate-heavy.html'), fixture('listing.html'), ...Array.from({ length: 30 }, (_, i) => articlePage(i))];
    for (const [i, html] of pages.entries()) {
      expect(parsePage(html, url, { maxLinks: 20 }), `page ${i}`).toEqual(referencePage(html, url, { maxLinks: 20 }));
    }
  });

  it('on 1,500 random markups, with the text cap small and large', () => {
    for (let seed = 1; seed <= 1500; seed++) {
      // Half of them all ASCII, half not.
      // eslint-disable-next-line no-control-regex -- "not ASCII" is everything above U+007F
      const html = seed % 2 === 0 ? randomMarkup(seed).replace(/[^\x00-\x7f]/g, '') : randomMarkup(seed);
      const options = { maxLinks: seed % 4 === 0 ? 3 : 100, maxTextChars: seed % 3 === 0 ? 1 + (seed % 40) : 200_000, productToken: seed % 2 === 0 ? 'trawl' : 'Other' };
      expect(parsePage(html, url, options), html).toEqual(referencePage(html, url, options));
    }
  });

  it('on pages nested past the cap (the flat fallback)', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const html = `${randomMarkup(seed)}${'<div>'.repeat(600)}${randomMarkup(seed + 1)}`;
      expect(parsePage(html, url), html).toEqual(referencePage(html, url, {}));
    }
  });
});
