import { simhash } from '@trawl/dedup';
import { decodeHtml } from '@trawl/parse';
import { type ParsedContent, parseContent } from './store-body.js';

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

/** Decode, parse (links, directives, text) and fingerprint an HTML body. Never throws on bad HTML. */
export function analyzePage(input: PageAnalysisInput): PageAnalysis {
  const decoded = decodeHtml(input.body, input.charset);
  const parsed = parseContent(decoded.text, input.url, input.maxLinks, input.productToken);
  return { charset: decoded.charset, parsed, simhash: parsed.text.wordCount > 0 ? simhash(parsed.text.text) : null };
}
