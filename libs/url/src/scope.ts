import { TrawlError } from '@trawl/core';
import { registrableDomain } from './host.js';
import { parseHttpUrl } from './normalize.js';

/** Which discovered URLs a crawl follows. */
export type ScopeMode = 'host' | 'domain' | 'any';

/**
 * `hosts` holds hosts as hostOf gives them (lowercase, non-default port kept), `domains`
 * registrable domains as registrableDomain gives them. Build it with scopeFromSeeds, or by hand
 * with entries in those forms.
 */
export interface Scope {
  mode: ScopeMode;
  hosts: ReadonlySet<string>;
  domains: ReadonlySet<string>;
  /**
   * Hosts and registrable domains in scope whatever the mode: seeds added with a scope of their
   * own (a `host` seed in a `domain` crawl adds only its host here, a `domain` seed in a `host`
   * crawl its domain).
   */
  extraHosts?: ReadonlySet<string>;
  extraDomains?: ReadonlySet<string>;
}

/**
 * Build a scope from seed URLs: `host` keeps each seed's host, `domain` each seed's registrable
 * domain, `any` everything. Both sets are filled whatever the mode. A seed that is not a valid
 * http(s) URL throws a TrawlError with its normalization code: seeds are checked where they
 * enter, so one arriving here unchecked is a bug, and skipping it would silently shrink the scope.
 */
export function scopeFromSeeds(mode: ScopeMode, seeds: readonly string[]): Scope {
  const hosts = new Set<string>();
  const domains = new Set<string>();
  for (const seed of seeds) {
    const parsed = parseHttpUrl(seed);
    if (!parsed.ok) throw new TrawlError(parsed.code, `seed ${parsed.reason}`, { action: 'fatal' });
    hosts.add(parsed.host);
    domains.add(registrableDomain(parsed.host));
  }
  return Object.freeze({ mode, hosts, domains });
}

/**
 * Whether a crawl with this scope follows the URL. In `host` mode the port is part of the host
 * (`:8080` is another site); in `domain` mode it is not. Never throws: a URL that is not http(s)
 * is out of every scope.
 */
export function inScope(scope: Scope, canonicalUrl: string): boolean {
  const parsed = parseHttpUrl(canonicalUrl);
  return parsed.ok && hostInScope(scope, parsed.host);
}

/** `inScope` for a URL already parsed: its canonical host (`hostOf`, `normalizeLink(…).host`). */
export function hostInScope(scope: Scope, host: string): boolean {
  if (scope.extraHosts?.has(host)) return true;
  if (scope.extraDomains && scope.extraDomains.size > 0 && scope.extraDomains.has(registrableDomain(host))) return true;
  switch (scope.mode) {
    case 'any':
      return true;
    case 'host':
      return scope.hosts.has(host);
    case 'domain':
      return scope.domains.has(registrableDomain(host));
  }
}
