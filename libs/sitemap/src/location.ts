/**
 * The sitemaps.org rule of "Sitemap file location": a sitemap may list only URLs on its own
 * scheme, host and port, in its own directory or below (`https://example.com/catalog/sitemap.xml`
 * covers `https://example.com/catalog/…`, not `https://example.com/images/…` nor
 * `http://example.com/catalog/…`). A sitemap that robots.txt names may list any URL of that
 * robots.txt's site ("cross submission"): its origin is enough. A sitemap index may list only
 * sitemaps of its own site.
 */

/** `scheme://host[:port]` of an absolute URL, by its text (no parse): up to the path's first `/`. */
function originText(url: string): string | null {
  const scheme = url.indexOf('://');
  if (scheme < 0) return null;
  const slash = url.indexOf('/', scheme + 3);
  const end = [slash, url.indexOf('?', scheme + 3), url.indexOf('#', scheme + 3)].filter((i) => i >= 0);
  return url.slice(0, end.length > 0 ? Math.min(...end) : url.length);
}

/** The sitemap's directory as a URL prefix: everything up to the last `/` of its path. */
function directoryOf(sitemapUrl: string): string | null {
  const origin = originText(sitemapUrl);
  if (origin === null) return null;
  const path = sitemapUrl.slice(origin.length).split(/[?#]/, 1)[0] ?? '';
  return `${origin}${path.slice(0, path.lastIndexOf('/') + 1) || '/'}`;
}

export interface SitemapLocation {
  /** The sitemap's own URL. */
  sitemapUrl: string;
  /** The origin of the robots.txt that named it (or the index it came from), else null. */
  robotsOrigin: string | null;
}

/**
 * Which entries a sitemap may list: a predicate over absolute URLs. Both the sitemap URL and the
 * entries must be in one canonical form (the crawl's normalized URLs: lowercase scheme and host,
 * no default port), as it compares text: no URL is parsed again.
 */
export function sitemapLocationRule(location: SitemapLocation, kind: 'urlset' | 'index'): (url: string) => boolean {
  const origin = originText(location.sitemapUrl);
  // An index lists sitemaps anywhere on its site; a urlset only below its own directory.
  const own = kind === 'index' ? (origin === null ? null : `${origin}/`) : directoryOf(location.sitemapUrl);
  const named = location.robotsOrigin === null ? null : `${location.robotsOrigin}/`;
  return (url) => (own !== null && url.startsWith(own)) || (named !== null && url.startsWith(named));
}
