import type { ParsedPage } from './parse-html.js';

export interface ResolvedLink {
  /** Absolute http(s) URL as the WHATWG parser serializes it; not normalized. */
  url: string;
  /** The link's rel says nofollow, or the page's meta robots says nofollow. */
  nofollow: boolean;
}

export interface ResolvedLinks {
  urls: ResolvedLink[];
  /** Links dropped: not http(s) (mailto:, javascript:, tel:, data:, …) or unparseable. */
  dropped: number;
}

const CRAWLABLE_PROTOCOLS = new Set(['http:', 'https:']);

/**
 * Resolve a page's links to absolute URLs: against its `<base href>` (itself resolved against
 * the page URL) when there is one, else against the page URL. Pure; the caller normalizes,
 * scopes and dedupes. Page-level `nofollow` (meta robots) is folded into every link, so a
 * consumer that only looks at `nofollow` here cannot miss it.
 */
export function resolveLinks(page: ParsedPage, pageUrl: string): ResolvedLinks {
  const base = documentBaseUrl(page.baseHref, pageUrl);
  const urls: ResolvedLink[] = [];
  let dropped = 0;
  for (const link of page.links) {
    const url = parseUrl(link.href, base);
    if (url === null || !CRAWLABLE_PROTOCOLS.has(url.protocol)) {
      dropped++;
      continue;
    }
    urls.push({ url: url.href, nofollow: link.nofollow || page.metaRobots.nofollow });
  }
  return { urls, dropped };
}

/**
 * HTML §4.2.3 (the frozen base URL): the first base href resolved against the document URL.
 * A base that fails to parse, or is not http(s) (a `javascript:` or `data:` base would make
 * every relative link unusable), falls back to the document URL.
 */
function documentBaseUrl(baseHref: string | null, pageUrl: string): string | undefined {
  const page = parseUrl(pageUrl, undefined);
  const fallback = page?.href;
  if (baseHref === null) return fallback;
  const base = parseUrl(baseHref, fallback);
  if (base === null || !CRAWLABLE_PROTOCOLS.has(base.protocol)) return fallback;
  return base.href;
}

function parseUrl(input: string, base: string | undefined): URL | null {
  try {
    return new URL(input, base);
  } catch {
    return null;
  }
}
