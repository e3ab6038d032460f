import { load } from 'cheerio';
import { franc } from 'franc-min';
import { iso6393To1 } from 'iso-639-3/iso6393-to-1.js';
import { type DomDocument, type DomElement, type DomNode, elementsInDocumentOrder, hasToken, type HtmlDocument, loadHtml, MAX_TITLE_CHARS } from './parse-html.js';

export interface ExtractedText {
  title: string | null;
  /** `<meta name="description">`, else `og:description`. */
  description: string | null;
  /**
   * Lowercased language tag: `<html lang>`, else `<meta http-equiv="content-language">`, else
   * detected from the text (ISO 639-1 where one exists, else 639-3); null when unknown.
   */
  language: string | null;
  languageSource: 'html' | 'meta' | 'detected' | null;
  /** `<link rel="canonical">`, absolute (resolved against `<base href>` and the page URL). */
  canonical: string | null;
  /** The visible main text: paragraphs one per line, boilerplate left out. */
  text: string;
  wordCount: number;
}

export interface ExtractTextOptions {
  /** Text kept at most (characters); the rest of a huge page is dropped. Default 200,000. */
  maxTextChars?: number;
  /** As in parseHtml: deeper markup is read by a flat fallback. Default 512. */
  maxNestingDepth?: number;
}

export const DEFAULT_MAX_TEXT_CHARS = 200_000;
const MAX_DESCRIPTION_CHARS = 1024;
/** Detection reads this much text: trigram statistics settle long before. */
const DETECT_CHARS = 2000;
/** Shorter text is too little to guess a language from. */
const DETECT_MIN_CHARS = 50;

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
export function extractText(html: string, url: string, options: ExtractTextOptions = {}): ExtractedText {
  if (typeof html !== 'string' || html.length === 0) return emptyText();
  return readText(loadHtml(html, options.maxNestingDepth), url, options);
}

const emptyText = (): ExtractedText => ({ title: null, description: null, language: null, languageSource: null, canonical: null, text: '', wordCount: 0 });

/** `extractText` on a document already loaded (the one `parseHtml`'s links came from). */
export function readText(doc: HtmlDocument, url: string, options: ExtractTextOptions = {}): ExtractedText {
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
