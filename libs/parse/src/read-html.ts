import { Parser } from 'htmlparser2';

/**
 * One streaming pass of htmlparser2's Parser over a page, no DOM built: what link extraction
 * (`parseHtml`) and text extraction (`extractText`) read, gathered from the parser's events.
 *
 * The Parser's open and close events, implied ones included, are exactly the tree the DOM
 * handler would build from them (cheerio's htmlparser2 mode is that handler on this parser), so
 * "in document order", "the first", "an ancestor" and "the text under" read the same here as on
 * the DOM. The one thing a single pass cannot know early is where the main text lives (one
 * `<article>`, else `<main>`, else `<body>`, else the whole document): the visible text is
 * therefore collected for each candidate while it is open, and the right one chosen at the end.
 * read-html.test.ts checks the result against the DOM walk this replaced, on many pages.
 */

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
export const BLOCK = new Set([
  'address', 'article', 'blockquote', 'body', 'br', 'caption', 'dd', 'details', 'div', 'dl', 'dt', 'fieldset', 'figcaption',
  'figure', 'footer', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'html', 'li', 'main', 'ol', 'p', 'pre', 'section',
  'summary', 'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
]);

/** A title longer than this is cut: a hostile page must not inflate every record. */
export const MAX_TITLE_CHARS = 1024;

/** HTML's ASCII whitespace, the separator of rel token lists (HTML §2.3.7). */
const ASCII_WHITESPACE = /[\t\n\f\r ]+/;

export function hasToken(list: string | undefined, token: string): boolean {
  if (list === undefined) return false;
  return list.toLowerCase().split(ASCII_WHITESPACE).includes(token);
}

/** An element as the pass sees it. */
export interface HtmlTag {
  name: string;
  attribs: Record<string, string>;
}

export interface ReadHtmlOptions {
  /** Each tag, in document order (the order of the DOM's pre-order walk). */
  onTag?: (tag: HtmlTag) => void;
  /** Text kept at most per candidate main-text root (characters). */
  maxTextChars: number;
}

/** What the pass gathers for text extraction; link extraction reads the tags through `onTag`. */
export interface HtmlReading {
  /** The first `<title>`'s own text (its text children), null without one. */
  title: string | null;
  /**
   * The first `<title>` whose text (all descendants'), whitespace folded, is not blank; cut at
   * MAX_TITLE_CHARS. What `parseHtml` gives as the title.
   */
  pageTitle: string | null;
  description: string | null;
  htmlLang: string | undefined;
  metaLanguage: string | undefined;
  canonical: string | null;
  baseHref: string | null;
  /**
   * The text under the main-text root, as a stream of text and line breaks (a block element
   * opens and closes with one), boilerplate subtrees left out, cut once `maxTextChars` of text
   * were read; not yet cleaned up.
   */
  rawText: string;
}

/** One candidate root of the main text: the text under it, gathered while it is open. */
interface Candidate {
  /** Its index in the open-element stack (-1: the document). */
  depth: number;
  open: boolean;
  parts: string[];
  length: number;
}

interface OpenElement {
  name: string;
  /** The deepest stack index of a boilerplate element from the root down to this one (-1: none). */
  boilerplateDepth: number;
}

/**
 * Reads `html` in one pass. Never throws on markup (htmlparser2 accepts any string); deep nesting
 * is the caller's to guard (see nesting.ts).
 */
export function readHtml(html: string, options: ReadHtmlOptions): HtmlReading {
  const maxChars = options.maxTextChars;
  const onTag = options.onTag;
  const reading: HtmlReading = { title: null, pageTitle: null, description: null, htmlLang: undefined, metaLanguage: undefined, canonical: null, baseHref: null, rawText: '' };
  let ogDescription: string | null = null;
  const stack: OpenElement[] = [];
  const newCandidate = (depth: number): Candidate => ({ depth, open: true, parts: [], length: 0 });
  const documentRoot = newCandidate(-1);
  let body: Candidate | null = null;
  let main: Candidate | null = null;
  let article: Candidate | null = null;
  let articles = 0;
  let articleDepth = 0;
  /** Stack index of the first `<title>` while open (its own text), and of any title (all its text). */
  let firstTitleDepth = -2;
  let titleDepth = -1;
  let titleText = '';
  let firstTitleSeen = false;
  const candidates: Candidate[] = [documentRoot];

  /** Appends to every open candidate that the innermost boilerplate element does not hide. */
  const emit = (text: string, isText: boolean): void => {
    const hidden = stack.length === 0 ? -1 : (stack[stack.length - 1] as OpenElement).boilerplateDepth;
    for (const c of candidates) {
      if (!c.open || hidden > c.depth || c.length >= maxChars) continue;
      c.parts.push(text);
      if (isText) c.length += text.length;
    }
  };

  const parser = new Parser(
    {
      onopentag(name, attribs) {
        onTag?.({ name, attribs });
        const depth = stack.length;
        const parentDepth = depth === 0 ? -1 : (stack[depth - 1] as OpenElement).boilerplateDepth;
        const boilerplate = isBoilerplate(name, attribs, articleDepth > 0);
        stack.push({ name, boilerplateDepth: boilerplate ? depth : parentDepth });
        if (name === 'article') articleDepth++;
        switch (name) {
          case 'html':
            reading.htmlLang ??= attribs['lang'] ?? attribs['xml:lang'];
            break;
          case 'body':
            if (body === null) candidates.push((body = newCandidate(depth)));
            break;
          case 'title':
            if (!firstTitleSeen) {
              firstTitleSeen = true;
              firstTitleDepth = depth;
              reading.title = '';
            }
            if (titleDepth === -1) {
              titleDepth = depth;
              titleText = '';
            }
            break;
          case 'base':
            if (reading.baseHref === null && attribs['href'] !== undefined) reading.baseHref = attribs['href'].trim();
            break;
          case 'link':
            if (reading.canonical === null && hasToken(attribs['rel'], 'canonical') && attribs['href']?.trim()) reading.canonical = attribs['href'].trim();
            break;
          case 'meta': {
            const metaName = (attribs['name'] ?? attribs['property'] ?? '').trim().toLowerCase();
            if (metaName === 'description') reading.description ??= attribs['content'] ?? null;
            else if (metaName === 'og:description') ogDescription ??= attribs['content'] ?? null;
            if ((attribs['http-equiv'] ?? '').trim().toLowerCase() === 'content-language') reading.metaLanguage ??= attribs['content'];
            break;
          }
          case 'article':
            if (++articles === 1) candidates.push((article = newCandidate(depth)));
            break;
          case 'main':
            if (main === null) candidates.push((main = newCandidate(depth)));
            break;
          default:
            if (main === null && (attribs['role'] ?? '').trim().toLowerCase() === 'main') candidates.push((main = newCandidate(depth)));
        }
        if (BLOCK.has(name)) emit('\n', false);
      },
      ontext(text) {
        if (titleDepth !== -1) {
          if (reading.pageTitle === null) titleText += text;
          if (stack.length - 1 === firstTitleDepth) reading.title += text;
        }
        emit(text, true);
      },
      onclosetag(name) {
        const depth = stack.length - 1;
        if (depth < 0) return;
        if (BLOCK.has(name)) emit('\n', false);
        if (depth === titleDepth) {
          titleDepth = -1;
          if (reading.pageTitle === null) {
            const folded = titleText.replace(/\s+/g, ' ').trim().slice(0, MAX_TITLE_CHARS);
            if (folded !== '') reading.pageTitle = folded;
          }
        }
        if (depth === firstTitleDepth) firstTitleDepth = -2;
        if (name === 'article') articleDepth--;
        for (const c of candidates) if (c.open && c.depth === depth) c.open = false;
        stack.pop();
      },
    },
    { xmlMode: false, decodeEntities: true },
  );
  parser.end(html);
  reading.description ??= ogDescription;
  // One article is the page's subject; several (a listing) are not, so take <main> or <body>.
  const root = (articles === 1 ? article : main) ?? body ?? documentRoot;
  reading.rawText = root.parts.join('').slice(0, maxChars);
  return reading;
}

export function isBoilerplate(name: string, a: Record<string, string>, insideArticle: boolean): boolean {
  if (NEVER_TEXT.has(name) || FURNITURE.has(name)) return true;
  if (a['hidden'] !== undefined || a['aria-hidden'] === 'true') return true;
  const style = a['style'];
  if (style !== undefined && HIDDEN_STYLE.test(style)) return true;
  const role = a['role'];
  if (role !== undefined && FURNITURE_ROLES.has(role.trim().toLowerCase())) return true;
  // The site's header and footer; an article's own header (its headline) stays.
  if ((name === 'header' || name === 'footer') && !(name === 'header' && insideArticle)) return true;
  if (name === 'body' || name === 'main' || name === 'article') return false;
  const className = a['class'];
  const id = a['id'];
  if (className === undefined && id === undefined) return false;
  for (const word of `${className ?? ''} ${id ?? ''}`.toLowerCase().split(/[\s_-]+/)) {
    if (FURNITURE_WORDS.has(word)) return true;
  }
  return false;
}
const HIDDEN_STYLE = /display\s*:\s*none|visibility\s*:\s*hidden/i;

/** The text of markup that has no tags (every `<` escaped), entities decoded as in a text node. */
export function decodeText(markup: string): string {
  let text = '';
  const parser = new Parser({ ontext: (chunk) => (text += chunk) }, { xmlMode: false, decodeEntities: true });
  parser.end(markup);
  return text;
}
