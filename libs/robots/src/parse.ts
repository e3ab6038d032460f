import { ErrorCode, TrawlError } from '@trawl/core';
import robotsParserModule from 'robots-parser';
import { byPrecedence, type CompiledRule, compileRule, type RobotsRule, ruleMatches } from './match.js';
import { originOf } from './origin.js';
import { matchForm, robotsText } from './text.js';

// robots-parser is CommonJS (`module.exports = function`) with typings that declare an ES default
// export. At run time (Node, vitest, tsx) the default import *is* that function; TypeScript under
// NodeNext types the default import as the whole module, hence the cast.
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;

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
}

/**
 * A product token as robots.txt groups are matched: lower case (RFC 9309 §2.2.1 matching is
 * case-insensitive), and only its leading run of letters, `_` and `-` — the characters a product
 * token may have — so `trawl/1.0` and `Trawl (+https://…)` both name `trawl`, as in Google's
 * reference parser. `*` is kept as itself.
 */
export function agentToken(value: string): string {
  const trimmed = value.trim().toLowerCase();
  if (trimmed === '*') return '*';
  return /^[a-z_-]*/.exec(trimmed)?.[0] ?? '';
}

/** robots-parser's internal group table: agent (lower case, cut at `/`) → rules of every group naming it. */
type ParsedGroup = Array<{ pattern?: unknown; allow?: unknown }> & { crawlDelay?: unknown };

function internalsChanged(what: string): TrawlError {
  return new TrawlError(ErrorCode.Parse, `robots-parser internals are not what @trawl/robots expects (${what}); check its pinned version`, {
    action: 'fatal',
  });
}

/**
 * robots-parser builds groups (RFC 9309 §2.2.1: consecutive user-agent lines share the rules
 * that follow; groups naming the same agent are merged) but only exposes a matcher that differs
 * from RFC 9309 (see README). We take its group table and match ourselves. The table is not
 * public API, so its shape is checked on every parse and the dependency is pinned exactly.
 */
function groupTable(robot: unknown): Array<[string, ParsedGroup]> {
  const table = (robot as { _rules?: unknown })._rules;
  if (typeof table !== 'object' || table === null) throw internalsChanged('no _rules table');
  const groups = Object.entries(table as Record<string, unknown>);
  for (const [, group] of groups) if (!Array.isArray(group)) throw internalsChanged('a group is not an array');
  return groups as Array<[string, ParsedGroup]>;
}

/** Does any `User-agent:` line name `token`? Lines and comments split as robots-parser splits them. */
function namesAgent(text: string, token: string): boolean {
  for (const line of text.split(/\r\n|\r|\n/)) {
    const match = /^\s*user-agent\s*:([^#]*)/i.exec(line);
    if (match !== null && agentToken(match[1] ?? '') === token) return true;
  }
  return false;
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
    const path = matchForm(parsed.pathname + parsed.search);
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
 * - The group naming our token applies, else the `*` group, else nothing (§2.2.1). A group
 *   naming us with no rules at all still applies: everything is allowed.
 * - Longest pattern wins, Allow wins a tie, `*` and `$` (§2.2.2, §2.2.3); patterns and paths
 *   are compared in one percent-encoding (`matchForm`).
 * - Crawl-delay (not in RFC 9309; seconds, may be fractional) is read from the applying group.
 */
export function parseRobots(robotsUrl: string, body: string | Buffer, productToken: string): RobotsRules {
  const token = agentToken(productToken);
  if (token === '' || token === '*') {
    throw new TrawlError(ErrorCode.ConfigInvalid, `not a robots.txt product token: ${JSON.stringify(productToken)}`, { action: 'fatal' });
  }
  const origin = originOf(robotsUrl);
  const text = robotsText(body);
  const robot = robotsParser(`${origin}/robots.txt`, text);

  const ours: ParsedGroup[] = [];
  const star: ParsedGroup[] = [];
  for (const [agent, group] of groupTable(robot)) {
    if (agent === '*') star.push(group);
    else if (agentToken(agent) === token) ours.push(group);
  }
  // robots-parser keeps no trace of a group without rules; such a group naming us still applies.
  const applying = ours.length > 0 || namesAgent(text, token) ? ours : star;

  const rules: CompiledRule[] = [];
  let crawlDelaySeconds: number | null = null;
  for (const group of applying) {
    for (const rule of group) {
      if (typeof rule.pattern !== 'string' || typeof rule.allow !== 'boolean') throw internalsChanged('a rule without pattern/allow');
      // robots-parser has already percent-encoded non-ASCII and upper-cased escapes; matchForm
      // finishes the job (unreserved escapes decoded, `[` `]` and friends encoded) and is idempotent.
      rules.push(compileRule({ allow: rule.allow, pattern: matchForm(rule.pattern) }));
    }
    const delay = group.crawlDelay;
    // Number('') is 0 and Number('-1') is -1 in robots-parser's hands: keep only real delays.
    if (typeof delay === 'number' && Number.isFinite(delay) && delay >= 0) {
      crawlDelaySeconds = Math.max(crawlDelaySeconds ?? 0, delay);
    }
  }
  rules.sort(byPrecedence);

  const sitemaps = new Set<string>();
  for (const value of robot.getSitemaps()) {
    const url = absoluteHttpUrl(value);
    if (url !== null) sitemaps.add(url);
  }

  return new ParsedRobots(origin, rules, crawlDelaySeconds === null ? null : Math.round(crawlDelaySeconds * 1000), [...sitemaps]);
}
