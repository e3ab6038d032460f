/**
 * robots.txt records and groups (RFC 9309 §2.1–§2.2): lines to `key: value` records, records to
 * the groups each product token gets. No matching here (see `match.ts`).
 */

/** One `key: value` line, key lower case, comment and surrounding white space removed. */
export interface RobotsRecord {
  key: string;
  value: string;
}

/**
 * The records of a robots.txt text in order. A line is `key: value` (§2.2: "each line contains a
 * key-value pair separated by a colon"); one without a colon is no record (Google's reference
 * also reads `disallow /`, a leniency RFC 9309 does not ask for), and `#` starts a comment.
 */
export function* records(text: string): Generator<RobotsRecord> {
  for (const raw of text.split(/\r\n|\r|\n/)) {
    const hash = raw.indexOf('#');
    const line = hash < 0 ? raw : raw.slice(0, hash);
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    if (key === '') continue;
    yield { key, value: line.slice(colon + 1).trim() };
  }
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

export interface RawRule {
  allow: boolean;
  /** As written (not yet in match form). */
  pattern: string;
}

/** A record that belongs to the group it stands in and is not a rule (e.g. Content-Signal). */
export type GroupRecord = RobotsRecord;

/** What robots.txt says to one product token (or to `*`), every group naming it merged. */
export interface AgentView {
  rules: RawRule[];
  /** Crawl-delay values (seconds) addressed to this agent. */
  crawlDelays: number[];
  /** The group's other records this lib reads (usage preferences), in order. */
  extensions: GroupRecord[];
}

export interface RobotsGroups {
  /** The view of our token: groups naming it, else those naming `*`, else nothing (§2.2.1). */
  ours: AgentView;
  /** Whether a group names our token (then `*` does not apply to us). */
  named: boolean;
  /** `Sitemap:` values anywhere in the file, in order. */
  sitemaps: string[];
  /** Extension records outside any group (they apply to every crawler), in order. */
  globalExtensions: GroupRecord[];
}

/** Extension records kept per group; any other unknown record is skipped. */
const EXTENSIONS = new Set(['content-signal', 'content-usage']);

/**
 * The groups a product token gets (RFC 9309 §2.1 grammar: a group is one or more `user-agent`
 * lines, then its rules; §2.2.1: groups naming the same token are merged). A group ends only at a
 * `user-agent` line that follows a rule: any other record between two `user-agent` lines
 * (Crawl-delay, Sitemap, an unknown one) leaves them in one group (§2.2.4: other records "MUST NOT
 * interfere with the parsing of explicitly defined records"). Rules before the first
 * `user-agent` line belong to no group and are ignored.
 *
 * Crawl-delay is no RFC 9309 record: it is read as its usual readers do, addressed to the
 * `user-agent` lines just above it (the run since the last other record), so `User-agent: a /
 * Crawl-delay: 1 / User-agent: b / Disallow: /x` gives `a` a delay and both `a` and `b` the rule.
 */
export function groupsFor(text: string, token: string): RobotsGroups {
  const mine: AgentView = { rules: [], crawlDelays: [], extensions: [] };
  const star: AgentView = { rules: [], crawlDelays: [], extensions: [] };
  const sitemaps: string[] = [];
  const globalExtensions: GroupRecord[] = [];
  let named = false;

  // The group being read: which of (us, *) it names, whether it has rules yet.
  let inGroup = false;
  let groupHasRules = false;
  let groupNames = { mine: false, star: false };
  // The latest run of consecutive user-agent lines (Crawl-delay's addressees).
  let lastWasAgent = false;
  let runNames = { mine: false, star: false };

  const targets = (names: { mine: boolean; star: boolean }): AgentView[] => [...(names.mine ? [mine] : []), ...(names.star ? [star] : [])];

  for (const { key, value } of records(text)) {
    if (key === 'user-agent') {
      if (!inGroup || groupHasRules) {
        inGroup = true;
        groupHasRules = false;
        groupNames = { mine: false, star: false };
      }
      if (!lastWasAgent) runNames = { mine: false, star: false };
      const agent = agentToken(value);
      if (agent === token) {
        groupNames.mine = runNames.mine = named = true;
      } else if (agent === '*') {
        groupNames.star = runNames.star = true;
      }
      lastWasAgent = true;
      continue;
    }
    lastWasAgent = false;
    if (key === 'sitemap') {
      // §2.2.4: a sitemap record is not tied to any group.
      sitemaps.push(value);
    } else if (key === 'allow' || key === 'disallow') {
      if (!inGroup) continue;
      groupHasRules = true;
      // An empty value is no rule (`Disallow:` allows everything).
      if (value !== '') for (const view of targets(groupNames)) view.rules.push({ allow: key === 'allow', pattern: value });
    } else if (key === 'crawl-delay') {
      if (!inGroup) continue;
      const seconds = crawlDelaySeconds(value);
      if (seconds !== null) for (const view of targets(runNames)) view.crawlDelays.push(seconds);
    } else if (EXTENSIONS.has(key)) {
      if (inGroup) for (const view of targets(groupNames)) view.extensions.push({ key, value });
      else globalExtensions.push({ key, value });
    }
  }
  return { ours: named ? mine : star, named, sitemaps, globalExtensions };
}

/** A Crawl-delay value in seconds: a non-negative decimal number, else none. */
function crawlDelaySeconds(value: string): number | null {
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(value)) return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? seconds : null;
}
