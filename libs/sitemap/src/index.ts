/**
 * Sitemaps (sitemaps.org protocol): a streaming, bounded parser for urlset and sitemap index
 * files, gzipped or not, and the decision a sitemap entry calls for. Parses bytes only: fetching
 * the files (politely, through the host gate) is the crawl's business.
 */
export { DEFAULT_SITEMAP_DECISION, type SitemapDecision, type SitemapDecisionOptions, sitemapDecision } from './decide.js';
export { parseRfc822Date, parseW3cDatetime } from './lastmod.js';
export { type SitemapLocation, sitemapLocationRule } from './location.js';
export {
  type ChangeFreq,
  DEFAULT_SITEMAP_LIMITS,
  parseSitemap,
  type SitemapEntry,
  type SitemapInput,
  type SitemapLimits,
  type SitemapResult,
} from './parse.js';
