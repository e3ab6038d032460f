import { TrawlError } from '@trawl/core';
import { getDomain } from 'tldts';
import { parseHttpUrl } from './normalize.js';

/**
 * The politeness/robots key of a canonical URL: lowercase host with a non-default port
 * ("example.com", "127.0.0.5:8080"). Any valid http(s) URL gives the same key as its canonical
 * form; anything else throws a TrawlError (ERR_URL_INVALID / ERR_URL_SCHEME), since a caller
 * holding a "canonical URL" that is not one has a bug.
 */
export function hostOf(canonicalUrl: string): string {
  const parsed = parseHttpUrl(canonicalUrl);
  if (!parsed.ok) throw new TrawlError(parsed.code, parsed.reason, { action: 'skip' });
  return parsed.host;
}

// Private domains (foo.github.io, bar.blogspot.com) are sites of their own: one owner, one crawl scope.
const TLDTS_OPTIONS = { allowPrivateDomains: true, extractHostname: false } as const;

/**
 * The registrable domain (eTLD+1) of a host via tldts (allowPrivateDomains: true, so foo.github.io
 * is its own site); IP addresses and single-label hosts return the host itself; the port is
 * ignored. A host that is itself a public suffix (`co.uk`, `github.io`) also returns itself.
 */
export function registrableDomain(host: string): string {
  const hostname = stripTrailingDots(stripPort(host.toLowerCase()));
  return getDomain(hostname, TLDTS_OPTIONS) ?? hostname;
}

function stripPort(host: string): string {
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    return close < 0 ? host : host.slice(0, close + 1);
  }
  const colon = host.indexOf(':');
  // More than one colon without brackets is a bare IPv6 address, not host:port.
  if (colon < 0 || host.indexOf(':', colon + 1) >= 0) return host;
  return host.slice(0, colon);
}

function stripTrailingDots(host: string): string {
  let end = host.length;
  while (end > 0 && host.charCodeAt(end - 1) === 0x2e) end--;
  return end === host.length ? host : host.slice(0, end);
}
