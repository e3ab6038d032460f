/**
 * Which query (and path matrix) parameters normalization removes: tracking parameters that
 * never change the page, and session ids that make one page look like endless distinct URLs.
 */

export const DEFAULT_STRIP_PARAMS: readonly string[] = Object.freeze([
  // Campaign tagging (Google Analytics UTM, also used by most other tools).
  'utm_*',
  // Ad click ids: Google, DoubleClick, Facebook, Microsoft, Yandex, Instagram, TikTok, Twitter, LinkedIn.
  'gclid', 'gclsrc', 'gbraid', 'wbraid', 'dclid', 'fbclid', 'msclkid', 'yclid', 'igshid', 'ttclid',
  'twclid', 'li_fat_id',
  // Mailchimp, Google Analytics cross-domain linker, HubSpot, Marketo.
  'mc_cid', 'mc_eid', '_ga', '_gl', '_hsenc', '_hsmi', '__hstc', '__hssc', '__hsfp', 'mkt_tok',
  // Session ids: Java servlets, PHP, generic, classic ASP, ColdFusion.
  // `sid` is the riskiest entry (a few sites use it for content); drop it from the config if so.
  'jsessionid', 'phpsessid', 'sid', 'sessionid', 'session_id', 'aspsessionid*', 'cfid', 'cftoken',
]);

/** A compiled strip list: exact names and prefixes, all lowercase. */
export interface ParamMatcher {
  /** False when the list is empty, so callers can skip matching altogether. */
  readonly active: boolean;
  matches(name: string): boolean;
}

const matcherCache = new WeakMap<readonly string[], ParamMatcher>();

/** The matcher for a strip list, compiled once per list object. */
export function paramMatcher(stripParams: readonly string[]): ParamMatcher {
  let matcher = matcherCache.get(stripParams);
  if (matcher === undefined) {
    matcher = compileMatcher(stripParams);
    matcherCache.set(stripParams, matcher);
  }
  return matcher;
}

function compileMatcher(stripParams: readonly string[]): ParamMatcher {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const entry of stripParams) {
    const name = entry.trim().toLowerCase();
    if (name.endsWith('*')) prefixes.push(name.slice(0, -1));
    else if (name !== '') exact.add(name);
  }
  return {
    active: exact.size > 0 || prefixes.length > 0,
    matches(name: string): boolean {
      const lower = name.toLowerCase();
      if (exact.has(lower)) return true;
      for (const prefix of prefixes) if (lower.startsWith(prefix)) return true;
      return false;
    },
  };
}
