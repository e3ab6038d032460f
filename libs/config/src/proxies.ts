import { z } from 'zod';
import { splitList } from './fields.js';

/**
 * The proxy settings' syntax. Three strings, parsed here once into typed lists:
 *
 *   TRAWL_PROXY_URLS   dc1=http://user:pw@10.0.0.5:3128,dc2=http://10.0.0.6:3128,res1=socks5://res.example:1080
 *   TRAWL_PROXY_TIERS  direct=none;dc=dc1,dc2;res=res1         (or unnamed: none;dc1,dc2;res1)
 *   TRAWL_PROXY_RULES  example.com=none,shop.example=dc
 *
 * A proxy without `name=` is named by its position (1, 2, …), a tier likewise. `none` is the
 * direct connection: a member of a tier, or a rule's target (never proxied). A rule names a
 * domain and covers it and its subdomains; the longest matching domain wins.
 */

export interface ProxyEntry {
  name: string;
  /** The proxy URL, credentials included: never print it (see `redactProxyUrl`). */
  url: string;
}
export interface ProxyTier {
  name: string;
  /** Proxy names, or `none` for the direct connection. */
  members: string[];
}
export interface ProxyRule {
  /** A host or domain, lowercase: matches itself and every subdomain. */
  domain: string;
  /** A tier name, or `none`: never proxied. */
  tier: string;
}

/** The direct connection's name, in tiers and rules. */
export const DIRECT = 'none';
const NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const PROTOCOLS = ['http:', 'https:', 'socks5:'];
const DOMAIN = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** `http://user:pw@host:3128` → `http://***@host:3128`: a proxy as messages and `trawl config` show it. */
export function redactProxyUrl(raw: string): string {
  try {
    const url = new URL(raw);
    const auth = url.username !== '' || url.password !== '' ? '***@' : '';
    return `${url.protocol}//${auth}${url.host}`;
  } catch {
    return '(not a URL)';
  }
}

/** Splits `name=value` (name optional); `value` may itself hold `=`. */
function named(part: string): { name: string | null; value: string } {
  const match = /^([A-Za-z0-9_-]+)=(.*)$/s.exec(part);
  // `http://…` has no `=` before `://`, so a URL is never mistaken for a name.
  return match ? { name: (match[1] as string).toLowerCase(), value: (match[2] as string).trim() } : { name: null, value: part };
}

export function parseProxyUrls(text: string): { entries: ProxyEntry[]; problems: string[] } {
  const entries: ProxyEntry[] = [];
  const problems: string[] = [];
  splitList(text).forEach((part, i) => {
    const { name: given, value } = named(part);
    const name = given ?? String(i + 1);
    const where = `proxy ${i + 1}${given === null ? '' : ` (${given})`}`;
    if (!NAME.test(name) || name === DIRECT) {
      problems.push(`${where}: a name is letters, digits, _ and - (at most 32), and not "${DIRECT}"`);
      return;
    }
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      // Never repeat the value: it may hold a password.
      problems.push(`${where}: not a URL (expected http://, https:// or socks5://host:port)`);
      return;
    }
    if (!PROTOCOLS.includes(url.protocol)) problems.push(`${where}: ${url.protocol}// is not supported (http://, https://, socks5://)`);
    else if (url.hostname === '') problems.push(`${where}: no host`);
    else if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '') problems.push(`${where} (${redactProxyUrl(value)}): a proxy URL has no path, query or fragment`);
    else if (entries.some((entry) => entry.name === name)) problems.push(`${where}: the name ${name} is used twice`);
    else entries.push({ name, url: value });
  });
  return { entries, problems };
}

export function parseProxyTiers(text: string): { tiers: ProxyTier[]; problems: string[] } {
  const tiers: ProxyTier[] = [];
  const problems: string[] = [];
  text
    .split(';')
    .map((part) => part.trim())
    .filter(Boolean)
    .forEach((part, i) => {
      const { name: given, value } = named(part);
      const name = given ?? String(i + 1);
      const members = splitList(value).map((member) => member.toLowerCase());
      if (!NAME.test(name) || name === DIRECT) problems.push(`tier ${i + 1}: a name is letters, digits, _ and - (at most 32), and not "${DIRECT}"`);
      else if (members.length === 0) problems.push(`tier ${name}: no members`);
      else if (new Set(members).size !== members.length) problems.push(`tier ${name}: a member is listed twice`);
      else if (tiers.some((tier) => tier.name === name)) problems.push(`tier ${name}: the name is used twice`);
      else tiers.push({ name, members });
    });
  return { tiers, problems };
}

export function parseProxyRules(text: string): { rules: ProxyRule[]; problems: string[] } {
  const rules: ProxyRule[] = [];
  const problems: string[] = [];
  for (const part of splitList(text)) {
    const match = /^([^=\s]+)=([^=\s]+)$/.exec(part);
    if (match === null) {
      problems.push(`rule ${JSON.stringify(part)}: expected domain=tier (or domain=${DIRECT})`);
      continue;
    }
    const domain = (match[1] as string).toLowerCase().replace(/^\*?\./, '').replace(/\.$/, '');
    const tier = (match[2] as string).toLowerCase();
    if (!DOMAIN.test(domain)) problems.push(`rule ${JSON.stringify(part)}: not a host or domain name`);
    else if (rules.some((rule) => rule.domain === domain)) problems.push(`rule ${JSON.stringify(part)}: ${domain} has a rule already`);
    else rules.push({ domain, tier });
  }
  return { rules, problems };
}

const parsing =
  <T>(parse: (text: string) => { problems: string[] } & T, pick: (parsed: T) => unknown) =>
  (text: string, ctx: z.RefinementCtx): unknown => {
    const parsed = parse(text);
    for (const message of parsed.problems) ctx.addIssue({ code: 'custom', message });
    return parsed.problems.length > 0 ? z.NEVER : pick(parsed);
  };

export const proxyUrls = () =>
  z
    .string()
    .transform(parsing(parseProxyUrls, (p) => p.entries))
    .pipe(z.array(z.object({ name: z.string(), url: z.string() })));
export const proxyTiers = () =>
  z
    .string()
    .transform(parsing(parseProxyTiers, (p) => p.tiers))
    .pipe(z.array(z.object({ name: z.string(), members: z.array(z.string()) })));
export const proxyRules = () =>
  z
    .string()
    .transform(parsing(parseProxyRules, (p) => p.rules))
    .pipe(z.array(z.object({ domain: z.string(), tier: z.string() })));

/**
 * The settings' cross-references: tier members are known proxies (or `none`), rules name known
 * tiers (or `none`). Without TRAWL_PROXY_TIERS every proxy forms one tier, named `1`.
 */
export function proxyPlanProblems(fetch: { proxyUrls: ProxyEntry[]; proxyTiers: ProxyTier[]; proxyRules: ProxyRule[] }): Array<{ path: string; message: string }> {
  const found: Array<{ path: string; message: string }> = [];
  const names = new Set(fetch.proxyUrls.map((entry) => entry.name));
  if (fetch.proxyTiers.length > 0 && fetch.proxyUrls.length === 0) found.push({ path: 'proxyTiers', message: 'tiers of proxies need TRAWL_PROXY_URLS' });
  for (const tier of fetch.proxyTiers) {
    const unknown = tier.members.filter((member) => member !== DIRECT && !names.has(member));
    if (unknown.length > 0) found.push({ path: 'proxyTiers', message: `tier ${tier.name} names ${unknown.join(', ')}, not in TRAWL_PROXY_URLS (names or positions: ${[...names].join(', ') || 'none'})` });
  }
  const tiers = new Set(fetch.proxyTiers.length > 0 ? fetch.proxyTiers.map((tier) => tier.name) : fetch.proxyUrls.length > 0 ? ['1'] : []);
  for (const rule of fetch.proxyRules) {
    if (rule.tier !== DIRECT && !tiers.has(rule.tier)) found.push({ path: 'proxyRules', message: `${rule.domain}=${rule.tier}: no tier ${rule.tier} (tiers: ${[...tiers].join(', ') || 'none'}; or ${DIRECT})` });
  }
  return found;
}
