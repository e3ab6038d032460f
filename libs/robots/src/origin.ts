import { ErrorCode, TrawlError } from '@trawl/core';

function parseHttpUrl(pageUrl: string): URL {
  let url: URL;
  try {
    url = new URL(pageUrl);
  } catch (cause) {
    throw new TrawlError(ErrorCode.UrlInvalid, `not an absolute URL: ${pageUrl.slice(0, 200)}`, { action: 'skip', cause });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TrawlError(ErrorCode.UrlScheme, `robots.txt applies to http(s) URLs only: ${url.protocol}`, { action: 'skip' });
  }
  return url;
}

/** `scheme://host[:port]` of a page (default port dropped), the key of everything robots. */
export function originOf(pageUrl: string): string {
  return parseHttpUrl(pageUrl).origin;
}

/**
 * RFC 9309 §2.3: the rules live at `/robots.txt` at the top of the authority, and apply to that
 * scheme, host and port only.
 */
export function robotsUrlFor(pageUrl: string): string {
  return `${originOf(pageUrl)}/robots.txt`;
}
