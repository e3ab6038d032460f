import { DEFAULT_MAX_NESTING_DEPTH, flattenForExtraction, nestingExceeds } from './nesting.js';
import { hasToken, type HtmlTag, MAX_TITLE_CHARS, readHtml } from './read-html.js';

export { MAX_TITLE_CHARS };

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

/** The robots meta names trawl obeys: the generic one and our own product token. */
const DEFAULT_PRODUCT_TOKEN = 'trawl';

/**
 * Extract what the crawl needs from one HTML page. Pure: no I/O, no URL resolution (see
 * `resolveLinks`). Never throws on garbage input: htmlparser2 is a forgiving tokenizer that
 * accepts any string, and markup nested deep enough to make it slow takes a flat fallback.
 * (`parsePage` gives this and the page's text from one pass.)
 */
export function parseHtml(html: string, options: ParseHtmlOptions = {}): ParsedPage {
  if (typeof html !== 'string' || html.length === 0) return emptyPage();
  const tooDeep = nestingExceeds(html, options.maxNestingDepth ?? DEFAULT_MAX_NESTING_DEPTH);
  const links = collectLinks(options);
  const reading = readHtml(tooDeep ? flattenForExtraction(html) : html, { onTag: links.onTag, maxTextChars: 0 });
  return links.page(reading.pageTitle, tooDeep);
}

export function emptyPage(): ParsedPage {
  return { links: [], linksTruncated: false, baseHref: null, canonical: null, metaRobots: { noindex: false, nofollow: false }, title: null, tooDeep: false };
}

/**
 * What `parseHtml` reads from each tag, in document order: `onTag` for `readHtml`, then `page`
 * with the title it found. Markup nested past the cap is read from the flat document of the
 * tags this needs (see `flattenForExtraction`).
 */
export function collectLinks(options: ParseHtmlOptions): { onTag: (tag: HtmlTag) => void; page: (title: string | null, tooDeep: boolean) => ParsedPage } {
  const maxLinks = Math.max(0, Math.floor(options.maxLinks ?? DEFAULT_MAX_LINKS));
  const robotsMetaNames = new Set(['robots', (options.productToken ?? DEFAULT_PRODUCT_TOKEN).toLowerCase()]);
  const page = emptyPage();
  const byHref = new Map<string, ExtractedLink>();
  const onTag = ({ name, attribs }: HtmlTag): void => {
    switch (name) {
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
    }
  };
  return {
    onTag,
    page: (title, tooDeep) => {
      page.title = title;
      page.tooDeep = tooDeep;
      return page;
    },
  };
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
