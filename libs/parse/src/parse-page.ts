import { type ExtractedText, extractText, type ExtractTextOptions, readText } from './extract-text.js';
import { loadHtml, type ParsedPage, parseHtml, type ParseHtmlOptions, readPage } from './parse-html.js';

export interface ParsedHtmlPage {
  /** What `parseHtml` gives: links, base, canonical, meta robots, title. */
  page: ParsedPage;
  /** What `extractText` gives: the visible main text and what the page says about itself. */
  text: ExtractedText;
}

export type ParsePageOptions = ParseHtmlOptions & ExtractTextOptions;

/**
 * `parseHtml` and `extractText` from one parse of the page: the crawl needs both for every
 * HTML page, and building the DOM is the larger part of either. Pure, never throws.
 */
export function parsePage(html: string, url: string, options: ParsePageOptions = {}): ParsedHtmlPage {
  if (typeof html !== 'string' || html.length === 0) return { page: parseHtml(html, options), text: extractText(html, url, options) };
  const doc = loadHtml(html, options.maxNestingDepth);
  return { page: readPage(doc, options), text: readText(doc, url, options) };
}
