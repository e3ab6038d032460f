/**
 * What a sitemap entry asks of the crawler:
 *   unknown-url             the crawler has never seen the page: discover it
 *   due-now-high-priority   the page changed (lastmod) after the crawler last saw it: fetch it
 *                           now, whatever its re-crawl schedule says
 *   nothing                 no lastmod, or nothing new since the last crawl
 */
export type SitemapDecision = 'due-now-high-priority' | 'unknown-url' | 'nothing';

export interface SitemapDecisionOptions {
  /** A lastmod further in the future than this is not believed (a generator stamping "now" with a wrong clock, a typo). */
  futureToleranceMs: number;
}

export const DEFAULT_SITEMAP_DECISION: SitemapDecisionOptions = { futureToleranceMs: 86_400_000 };

/**
 * `lastCrawledAt` is when the crawler last saw the page's content (null if never). A date-only
 * lastmod means midnight UTC of that day. Pure.
 */
export function sitemapDecision(
  lastmod: number | null,
  lastCrawledAt: number | null,
  now: number,
  options: SitemapDecisionOptions = DEFAULT_SITEMAP_DECISION,
): SitemapDecision {
  if (lastCrawledAt === null) return 'unknown-url';
  if (lastmod === null || lastmod > now + options.futureToleranceMs) return 'nothing';
  return lastmod > lastCrawledAt ? 'due-now-high-priority' : 'nothing';
}
