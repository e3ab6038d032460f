import { Sitemaps, type Database } from '@trawl/db';
import { type Frontier, UrlFlag } from '@trawl/frontier';
import type { Logger } from '@trawl/telemetry';
import { hostOf, normalizeUrl } from '@trawl/url';

/**
 * One sitemap sweep: sitemaps never fetched, or not for `refreshMs`, go into the frontier as
 * their own URLs (flagged, past the seen-set) — so they are fetched under their host's gate like
 * any page, and a worker parses them.
 */
export async function sitemapSweep(
  deps: { db: Pick<Database, 'pool' | 'options'>; frontier: Pick<Frontier, 'push'>; logger: Logger },
  options: { batch: number; refreshMs: number },
): Promise<{ pushed: number }> {
  const due = await new Sitemaps(deps.db.pool, deps.db.options.schema).takeDue(options.batch, options.refreshMs);
  if (due.length === 0) return { pushed: 0 };
  const items = due.flatMap(({ url }) => {
    // robots.txt names sitemaps as it likes: the frontier keys hosts by the canonical form.
    const normalized = normalizeUrl(url);
    if (!normalized.ok) {
      deps.logger.warn({ url, problem: normalized.reason }, 'a sitemap URL is not crawlable; skipped');
      return [];
    }
    return [{ url: normalized.url, host: hostOf(normalized.url), depth: 0, hops: 0, flags: UrlFlag.Sitemap, priority: 0.9 }];
  });
  const pushed = await deps.frontier.push(items, { maxUrlsPerHost: 0, maxQueryVariants: 0 });
  deps.logger.info({ pushed: pushed.pushed }, 'sitemap sweep');
  return { pushed: pushed.pushed };
}
