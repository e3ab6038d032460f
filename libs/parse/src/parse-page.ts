import { type ExtractedText, type ExtractTextOptions, DEFAULT_MAX_TEXT_CHARS, emptyText, flatExtract, textFrom } from './extract-text.js';
import { collectLinks, emptyPage, type ParsedPage, type ParseHtmlOptions } from './parse-html.js';
import { DEFAULT_MAX_NESTING_DEPTH, flattenForExtraction, nestingExceeds } from './nesting.js';
import { readHtml } from './read-html.js';

export interface ParsedHtmlPage {
  /** What `parseHtml` gives: links, base, canonical, meta robots, title. */
  page: ParsedPage;
  /** What `extractText` gives: the visible main text and what the page says about itself. */
  text: ExtractedText;
}

export type ParsePageOptions = ParseHtmlOptions & ExtractTextOptions;

/**
 * `parseHtml` and `extractText` from one streaming pass over the page (no DOM): the crawl needs
 * both for every HTML page. Pure, never throws.
 */
export function parsePage(html: string, url: string, options: ParsePageOptions = {}): ParsedHtmlPage {
  if (typeof html !== 'string' || html.length === 0) return { page: emptyPage(), text: emptyText() };
  const maxTextChars = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS;
  const links = collectLinks(options);
  if (nestingExceeds(html, options.maxNestingDepth ?? DEFAULT_MAX_NESTING_DEPTH)) {
    // Too deep to parse as a tree: links from the flat document of their tags, text stripped.
    const reading = readHtml(flattenForExtraction(html), { onTag: links.onTag, maxTextChars: 0 });
    return { page: links.page(reading.pageTitle, true), text: flatExtract(html, maxTextChars, options.countWords) };
  }
  try {
    const reading = readHtml(html, { onTag: links.onTag, maxTextChars });
    return { page: links.page(reading.pageTitle, false), text: textFrom(reading, url, options.countWords) };
  } catch {
    // Not expected (htmlparser2 accepts any string): the page as far as it was read.
    return { page: links.page(null, false), text: emptyText() };
  }
}
