import { type SimHashWithWords, simhashWithWords } from '@trawl/dedup';
import { countWords, decodeHtml, type ExtractedText, type ParsedPage, parsePage, resolveLinks } from '@trawl/parse';

export interface ParsedContent {
  page: ParsedPage;
  links: { url: string; nofollow: boolean }[];
  /** Links dropped for a non-http(s) scheme or unparseable. */
  dropped: number;
  /** The visible main text and what the page says about itself. */
  text: ExtractedText;
}

/**
 * Parse stage, one parse per page: links (with <base href>), canonical, meta robots, and the
 * page's text. Never throws on bad HTML.
 */
export function parseContent(html: string, pageUrl: string, maxLinks: number, productToken: string, count?: (text: string) => number): ParsedContent {
  const { page, text } = parsePage(html, pageUrl, { maxLinks, productToken, countWords: count });
  const { urls, dropped } = resolveLinks(page, pageUrl);
  return { page, links: urls, dropped, text };
}

/** What a page's analysis needs: the raw body and what the response and the policy say. */
export interface PageAnalysisInput {
  body: Uint8Array;
  /** The charset the Content-Type header names, if any. */
  charset: string | null;
  url: string;
  maxLinks: number;
  productToken: string;
}

/** The CPU-heavy part of keeping a page: decoded, parsed once, its text fingerprinted. */
export interface PageAnalysis {
  /** The encoding the body was decoded with. */
  charset: string;
  parsed: ParsedContent;
  /** The text's SimHash (null: no words). */
  simhash: bigint | null;
}

/**
 * Decode, parse (links, directives, text) and fingerprint an HTML body. Never throws on bad
 * HTML. The text's words are counted by SimHash's pass over it where that pass splits them
 * as `countWords` does (see `simhashWithWords`), else by `countWords`.
 */
export function analyzePage(input: PageAnalysisInput): PageAnalysis {
  const decoded = decodeHtml(input.body, input.charset);
  let fingerprinted: SimHashWithWords | null = null;
  const count = (text: string): number => {
    fingerprinted = simhashWithWords(text);
    return fingerprinted.words ?? countWords(text);
  };
  const parsed = parseContent(decoded.text, input.url, input.maxLinks, input.productToken, count);
  const fingerprint = (fingerprinted as SimHashWithWords | null)?.fingerprint ?? null;
  return { charset: decoded.charset, parsed, simhash: parsed.text.wordCount > 0 ? fingerprint : null };
}
