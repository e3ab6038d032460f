import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { SsrfCheck } from './types.js';

/** Every address a host name resolves to. */
export type ResolveAll = (hostname: string) => Promise<string[]>;

const systemResolve: ResolveAll = async (hostname) => (await dnsLookup(hostname, { all: true })).map((entry) => entry.address);

/**
 * An `SsrfCheck` from the fetch lib's address rule, so a page's request to a refused address is
 * refused before any fetch, with its reason in the render's request list:
 *
 *   ssrfCheckFrom((address) => blockedReason(address, { allowNetworks }))   // blockedReason from @trawl/fetch
 *
 * A host passes when one of its addresses is allowed: the fetcher's own guard (its lookup and its
 * check of every socket) then connects only to an allowed one. This check is the early, explained
 * refusal; the fetcher's stays the one that holds.
 */
export function ssrfCheckFrom(blockedReason: (address: string) => string | null, resolve: ResolveAll = systemResolve): SsrfCheck {
  return async (url) => {
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (isIP(host) !== 0) {
      const reason = blockedReason(host);
      return reason === null ? null : `ssrf:${reason}`;
    }
    let addresses: string[];
    try {
      addresses = await resolve(host);
    } catch (error) {
      return `dns:${(error as { code?: string }).code ?? 'failed'}`;
    }
    const reasons = addresses.map(blockedReason);
    if (reasons.some((reason) => reason === null)) return null;
    return `ssrf:${reasons[0] ?? 'no-address'}`;
  };
}
