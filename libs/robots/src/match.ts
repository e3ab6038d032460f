/**
 * RFC 9309 §2.2.2–§2.2.3 path matching on patterns and paths already in match form
 * (see `matchForm`): a rule matches when its pattern matches a prefix of the path, `*` matches
 * any run of octets (including none), and a trailing `$` requires the path to end there. A `$`
 * anywhere else is an ordinary octet, as in Google's reference parser. Only a literal `*` or `$`
 * is special: `%2A` and `%24` stand for the octets themselves (§2.2.3), so they become plain `*`
 * and `$` in the literal parts a pattern is split into (paths get the same reading, see
 * `parseRobots`).
 */
export interface RobotsRule {
  allow: boolean;
  /** The rule's path pattern, in match form. */
  pattern: string;
}

export interface CompiledRule extends RobotsRule {
  /** The pattern split at its wildcards (runs of `*` collapsed). */
  readonly parts: readonly string[];
  readonly anchored: boolean;
}

export function compileRule(rule: RobotsRule): CompiledRule {
  const anchored = rule.pattern.endsWith('$');
  const body = anchored ? rule.pattern.slice(0, -1) : rule.pattern;
  const split = body.split('*').map(literal);
  const first = split[0] ?? '';
  const parts =
    split.length === 1 ? [first] : [first, ...split.slice(1, -1).filter((part) => part !== ''), split[split.length - 1] ?? ''];
  return { allow: rule.allow, pattern: rule.pattern, parts, anchored };
}

/** A literal part of a pattern: its escaped `*` and `$` as the octets themselves. */
function literal(part: string): string {
  return part.includes('%2') ? part.replace(/%2A/g, '*').replace(/%24/g, '$') : part;
}

/**
 * Greedy matching is exact here: with only `*` wildcards, taking each literal part at its
 * leftmost possible position never rules out a match that a later position would allow.
 */
export function ruleMatches(rule: CompiledRule, path: string): boolean {
  const { parts, anchored } = rule;
  const first = parts[0] as string;
  if (!path.startsWith(first)) return false;
  if (parts.length === 1) return anchored ? path.length === first.length : true;
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i] as string;
    const found = path.indexOf(part, at);
    if (found < 0) return false;
    at = found + part.length;
  }
  const last = parts[parts.length - 1] as string;
  if (anchored) return path.length - last.length >= at && path.endsWith(last);
  return path.indexOf(last, at) >= 0;
}

/**
 * Orders rules so that the first one matching a path is the one that decides: the longest
 * pattern (in octets) first, and on equal length Allow before Disallow (RFC 9309 §2.2.2: "the
 * most specific match found MUST be used … if an allow rule and a disallow rule are equivalent,
 * then the allow rule SHOULD be used").
 */
export function byPrecedence(a: RobotsRule, b: RobotsRule): number {
  if (a.pattern.length !== b.pattern.length) return b.pattern.length - a.pattern.length;
  return Number(b.allow) - Number(a.allow);
}
