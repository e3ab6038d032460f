import { type CheerioAPI, load } from 'cheerio';
import { DEFAULT_MAX_NESTING_DEPTH, flattenForExtraction, nestingExceeds } from './nesting.js';

export interface ExtractedLink {
  /** The raw attribute value, trimmed; entities decoded, otherwise untouched. */
  href: string;
  /** The link's `rel` token list contains `nofollow` (`ugc` and `sponsored` do not count). */
  nofollow: boolean;
}

export interface MetaRobots {
  noindex: boolean;
  nofollow: boolean;
}

export interface ParsedPage {
  /** From `a[href]` and `area[href]`, in document order, one per raw href, at most `maxLinks`. */
  links: ExtractedLink[];
  /** True when `maxLinks` cut the list. */
  linksTruncated: boolean;
  /** The first `<base href>`, raw (trimmed). */
  baseHref: string | null;
  /** The first `<link rel="canonical" href>`, raw (trimmed). */
  canonical: string | null;
  /** `<meta name="robots">` and `<meta name="trawl">` (our product token) combined. */
  metaRobots: MetaRobots;
  title: string | null;
  /**
   * The markup nested deeper than `maxNestingDepth`, so it was not parsed as a tree: the
   * links, base, canonical, meta and title tags were lifted out by a flat scan instead.
   */
  tooDeep: boolean;
  text?: never;
}

export interface ParseHtmlOptions {
  /** Cap on distinct links kept per page (bounded resources). Default 5000. */
  maxLinks?: number;
  /** Estimated open-element depth above which the flat fallback is used. Default 512. */
  maxNestingDepth?: number;
  /** Our robots product token: <meta name="<token>"> applies to us like name="robots". Default 'trawl'. */
  productToken?: string;
}

export const DEFAULT_MAX_LINKS = 5000;
/** A title longer than this is cut: a hostile page must not inflate every record. */
export const MAX_TITLE_CHARS = 1024;

/** The robots meta names trawl obeys: the generic one and our own product token. */
const DEFAULT_PRODUCT_TOKEN = 'trawl';

/** HTML's ASCII whitespace, the separator of rel token lists (HTML §2.3.7). */
const ASCII_WHITESPACE = /[\t\n\f\r ]+/;

export type DomDocument = ReturnType<CheerioAPI['root']>[number];
export type DomNode = DomDocument['children'][number];
export type DomElement = Extract<DomNode, { attribs: Record<string, string> }>;

/**
 * One page parsed once: the DOM that link extraction (`readPage`) and text extraction
 * (`readText` in extract-text.ts) both read. Markup nested past the cap is not parsed as a tree:
 * `root` is then the flat document of the tags link extraction needs (see
 * `flattenForExtraction`), and text extraction strips `source` in one linear pass instead.
 */
export interface HtmlDocument {
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
export function loadHtml(html: string, maxNestingDepth = DEFAULT_MAX_NESTING_DEPTH): HtmlDocument {
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
export function parseHtml(html: string, options: ParseHtmlOptions = {}): ParsedPage {
  if (typeof html !== 'string' || html.length === 0) return emptyPage();
  return readPage(loadHtml(html, options.maxNestingDepth), options);
}

function emptyPage(): ParsedPage {
  return { links: [], linksTruncated: false, baseHref: null, canonical: null, metaRobots: { noindex: false, nofollow: false }, title: null, tooDeep: false };
}

/** `parseHtml` on a document already loaded. */
export function readPage(doc: HtmlDocument, options: ParseHtmlOptions = {}): ParsedPage {
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
export function* elementsInDocumentOrder(root: DomDocument | undefined): Generator<DomElement> {
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

export function hasToken(list: string | undefined, token: string): boolean {
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
