import { ErrorCode, TrawlError } from '@trawl/core';
import { agentToken, groupsFor } from './lines.js';
import { type CompiledRule, byPrecedence, compileRule, type RobotsRule, ruleMatches } from './match.js';
import { originOf } from './origin.js';
import { matchForm, robotsText } from './text.js';
import { type UsagePreference, usagePreferences } from './usage.js';

export { agentToken } from './lines.js';

export interface RobotsRules {
  /** `url`: an absolute canonical URL on this robots.txt's origin (any other origin: false). */
  isAllowed(url: string): boolean;
  /** The rule that decides `url` (null: no rule matches, so it is allowed), for logs. */
  matchingRule(url: string): RobotsRule | null;
  /** Crawl-delay of the group that applies to us, in ms; null when it gives none. */
  crawlDelayMs: number | null;
  /** Absolute http(s) URLs from `Sitemap:` lines anywhere in the file, first occurrence order. */
  sitemaps: string[];
  /** The Allow and Disallow rules that apply to us, in precedence order (for operators). */
  readonly rules: readonly RobotsRule[];
  /**
   * Usage preferences addressed to us or to every crawler (`Content-Signal`, `Content-Usage`),
   * in file order. Shown to operators; they never widen what may be fetched.
   */
  readonly usage: readonly UsagePreference[];
}

function absoluteHttpUrl(value: string): string | null {
  try {
    const url = new URL(value.trim());
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

class ParsedRobots implements RobotsRules {
  constructor(
    private readonly origin: string,
    private readonly compiled: readonly CompiledRule[],
    readonly crawlDelayMs: number | null,
    readonly sitemaps: string[],
    readonly usage: readonly UsagePreference[],
  ) {}

  get rules(): RobotsRule[] {
    return this.compiled.map((rule) => ({ allow: rule.allow, pattern: rule.pattern }));
  }

  isAllowed(url: string): boolean {
    return this.decide(url).allowed;
  }

  matchingRule(url: string): RobotsRule | null {
    return this.decide(url).rule;
  }

  private decide(url: string): { allowed: boolean; rule: RobotsRule | null } {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { allowed: false, rule: null };
    }
    // Another origin's robots.txt says nothing about this URL: never let it through by mistake.
    if (parsed.origin !== this.origin) return { allowed: false, rule: null };
    const path = pathForm(parsed.pathname + parsed.search);
    // RFC 9309 §2.2.2: "The /robots.txt URI is implicitly allowed."
    if (path === '/robots.txt') return { allowed: true, rule: null };
    // Rules are sorted by precedence, so the first match decides.
    for (const rule of this.compiled) {
      if (ruleMatches(rule, path)) return { allowed: rule.allow, rule: { allow: rule.allow, pattern: rule.pattern } };
    }
    return { allowed: true, rule: null };
  }
}

/**
 * Parses a robots.txt body for one product token (RFC 9309). Pure; never throws on any body
 * (garbage, binary, huge); throws only on a programming error (bad robots URL or token).
 *
 * - Only the first {@link ROBOTS_MAX_BYTES} are read (§2.5), as UTF-8, BOM dropped.
 * - The groups naming our token apply, else the `*` groups, else nothing (§2.2.1); a group
 *   naming us with no rules at all still applies: everything is allowed. A group ends only at a
 *   `user-agent` line after its rules (see `groupsFor`).
 * - Longest pattern wins, Allow wins a tie, `*` and `$` (§2.2.2, §2.2.3); patterns and paths
 *   are compared in one percent-encoding (`matchForm`), and `%2A` / `%24` in a pattern are a
 *   literal `*` / `$` (§2.2.3).
 * - Crawl-delay (not in RFC 9309; seconds, may be fractional) is read from the applying groups.
 */
export function parseRobots(robotsUrl: string, body: string | Buffer, productToken: string): RobotsRules {
  const token = agentToken(productToken);
  if (token === '' || token === '*') {
    throw new TrawlError(ErrorCode.ConfigInvalid, `not a robots.txt product token: ${JSON.stringify(productToken)}`, { action: 'fatal' });
  }
  const origin = originOf(robotsUrl);
  const groups = groupsFor(robotsText(body), token);
  const { ours } = groups;

  const rules: CompiledRule[] = ours.rules.map((rule) => compileRule({ allow: rule.allow, pattern: matchForm(rule.pattern) }));
  rules.sort(byPrecedence);
  const crawlDelaySeconds = ours.crawlDelays.length === 0 ? null : Math.max(...ours.crawlDelays);

  const sitemaps = new Set<string>();
  for (const value of groups.sitemaps) {
    const url = absoluteHttpUrl(value);
    if (url !== null) sitemaps.add(url);
  }
  const usage = usagePreferences([...groups.globalExtensions, ...ours.extensions]);

  return new ParsedRobots(origin, rules, crawlDelaySeconds === null ? null : Math.round(crawlDelaySeconds * 1000), [...sitemaps], usage);
}

/**
 * A URL's path and query as rule patterns see them: in match form, and with `%2A` and `%24`
 * read as the `*` and `$` they encode, since a pattern's `%2A` / `%24` stand for those literal
 * octets (RFC 9309 §2.2.3) and must match them however the URL spells them.
 */
function pathForm(pathAndQuery: string): string {
  const path = matchForm(pathAndQuery);
  return path.includes('%2') ? path.replace(/%2A/g, '*').replace(/%24/g, '$') : path;
}
