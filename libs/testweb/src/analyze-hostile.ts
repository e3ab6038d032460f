/**
 * Judges a crawl of the hostile web from the server's side: every HostileExpectation, the
 * private server's log (SSRF), Retry-After and back-off gaps, robots.txt before anything else,
 * and analyzeLog's politeness and duplicate findings, as one flat list of violations, so an
 * integration test can say `expect(report.violations).toEqual([])`. Pure: a log in, a report out.
 */
import type { LogAnalysis } from './analyze.js';
import { analyzeLog } from './analyze.js';
import type { HostileExpectation, HostileKind } from './hostile/types.js';
import type { RequestLogEntry } from './log.js';
import { requestKey } from './request-key.js';

export type HostileCheck =
  /** A mustFetch URL (or an `expected` one) never got a 2xx answer. */
  | 'must-fetch'
  /** A mustRequest URL was never requested. */
  | 'must-request'
  /** A mustNotFetch URL, or one under a mustNotFetchPrefixes prefix, was requested. */
  | 'must-not-fetch'
  /** A path the host's robots.txt disallows (as served; unreachable = all) was requested. */
  | 'robots'
  /** A request to a host before any robots.txt response of that host had finished. */
  | 'robots-first'
  /** A request to a host earlier than the previous response's Retry-After (log `notBefore`) or minGapAfterStatusMs. */
  | 'retry-after'
  /** Consecutive requests (robots.txt aside) closer than the expectation's minIntervalMs (Crawl-delay). */
  | 'min-interval'
  /** More requests to the host than maxRequests. */
  | 'max-requests'
  /** More requests matching a limit than its maxRequests. */
  | 'request-limit'
  /** A response matching a limit wrote more than maxBytesPerResponse. */
  | 'bytes'
  /** A response matching a limit stayed open longer than maxResponseMs. */
  | 'duration'
  /** A 404 under a notFoundPrefixes prefix (a mis-decoded link). */
  | 'not-found'
  /** The private server got a request. */
  | 'private'
  /** Two requests in flight to one host (analyzeLog). */
  | 'concurrency'
  /** Starts closer than options.minIntervalMs on one host (analyzeLog). */
  | 'interval'
  /** A page answered 2xx in full twice (analyzeLog over responses the client did not abandon; robots.txt aside). */
  | 'duplicate'
  /** A request to a host without expectation for a URL not in `expected`. */
  | 'unexpected'
  /** A response still open when the log was analyzed. */
  | 'open';

export type HostKind = HostileKind | 'normal' | 'private';

export interface HostileViolation {
  check: HostileCheck;
  /** The kind of host concerned: its hostile kind, 'normal' (no expectation names it) or 'private'. */
  kind: HostKind;
  origin: string;
  /** The canonical URL concerned, or null for a finding about the whole host. */
  url: string | null;
  /** Start (epoch ms) of the offending request, or null. */
  at: number | null;
  detail: string;
}

export interface AnalyzeHostileOptions {
  /** The private server's log: every entry is a 'private' violation. */
  privateLog?: readonly RequestLogEntry[];
  /** Politeness floor on every host, start to start (analyzeLog); default 0 = concurrency only. */
  minIntervalMs?: number;
  /** Slack for every timing check (timers, clocks); default 10 ms. */
  toleranceMs?: number;
  /** URLs that must get a 2xx answer besides the expectations' (the normal hosts' ground truth); also enables 'unexpected'. */
  expected?: ReadonlySet<string>;
  /** Check that robots.txt is answered before any other request to a host; default true. */
  robotsFirst?: boolean;
  /** Report duplicate successful fetches; default true. */
  duplicates?: boolean;
  /** Origin of an entry; default `http://${entry.host}`. */
  origin?: (entry: RequestLogEntry) => string;
  /** Longest violation list; counts stay exact. Default 1000. */
  maxListed?: number;
}

export interface HostileReport {
  /** No violation at all. */
  ok: boolean;
  /** Sorted by host kind (expectations' order, then normal, then private), then time. */
  violations: HostileViolation[];
  violationCount: number;
  counts: Partial<Record<HostileCheck, number>>;
  byKind: Partial<Record<HostKind, HostileViolation[]>>;
  /** analyzeLog over the same log. */
  analysis: LogAnalysis;
}

interface Item {
  entry: RequestLogEntry;
  url: string;
  key: string;
  start: number;
  end: number;
}

const ROBOTS = '/robots.txt';
const is2xx = (status: number): boolean => status >= 200 && status < 300;
const duration = (e: RequestLogEntry): number =>
  (e.startHr ?? -1) >= 0 && (e.endHr ?? -1) >= 0 ? (e.endHr as number) - (e.startHr as number) : e.end - e.start;

export function analyzeHostile(
  log: readonly RequestLogEntry[],
  expectations: readonly HostileExpectation[],
  options: AnalyzeHostileOptions = {},
): HostileReport {
  const tolerance = options.toleranceMs ?? 10;
  const originOf = options.origin ?? ((entry: RequestLogEntry) => `http://${entry.host}`);
  const byOrigin = new Map(expectations.map((e) => [e.origin, e]));
  const kindOf = (origin: string): HostKind => byOrigin.get(origin)?.kind ?? 'normal';
  const found: HostileViolation[] = [];
  const add = (check: HostileCheck, origin: string, url: string | null, at: number | null, detail: string, kind = kindOf(origin)): void => {
    found.push({ check, kind, origin, url, at, detail });
  };
  const itemOf = (entry: RequestLogEntry): Item => {
    const key = requestKey(entry.path) ?? entry.path;
    return { entry, key, url: originOf(entry) + key, start: entry.startHr ?? entry.start, end: entry.end < 0 ? -1 : (entry.endHr ?? entry.end) };
  };

  for (const entry of options.privateLog ?? []) {
    const item = itemOf(entry);
    add('private', originOf(entry), item.url, entry.start, `${entry.method} ${entry.path} reached the private server`, 'private');
  }

  const hosts = new Map<string, Item[]>();
  const hostOrigins = new Map<string, string>();
  for (const entry of log) {
    const item = itemOf(entry);
    const origin = originOf(entry);
    hostOrigins.set(entry.host, origin);
    const items = hosts.get(origin);
    if (items === undefined) hosts.set(origin, [item]);
    else items.push(item);
  }
  for (const items of hosts.values()) items.sort((a, b) => a.start - b.start);

  for (const e of expectations) checkExpectation(e, hosts.get(e.origin) ?? [], tolerance, add);

  for (const [origin, items] of hosts) {
    const gaps = byOrigin.get(origin)?.minGapAfterStatusMs ?? {};
    let robotsDone = Infinity;
    for (const item of items) if (item.key === ROBOTS && item.end >= 0) robotsDone = Math.min(robotsDone, item.end);
    items.forEach((item, i) => {
      const { entry } = item;
      const gap = gaps[entry.status];
      const required = Math.max(entry.notBefore ?? -Infinity, gap !== undefined && entry.end >= 0 ? entry.end + gap : -Infinity);
      const next = items[i + 1];
      if (next !== undefined && next.entry.start < required - tolerance) {
        add('retry-after', origin, next.url, next.entry.start,
          `${next.entry.path} started ${required - next.entry.start} ms before it was allowed after ${entry.status} on ${entry.path}`);
      }
      if (options.robotsFirst !== false && item.key !== ROBOTS && !(item.start >= robotsDone)) {
        add('robots-first', origin, item.url, entry.start, `${entry.path} requested before robots.txt was answered`);
      }
      if (item.end < 0) add('open', origin, item.url, entry.start, `${entry.path} still open (${entry.bytes} bytes so far)`);
    });
    if (options.expected !== undefined && !byOrigin.has(origin)) {
      const reported = new Set<string>();
      for (const item of items) {
        if (item.key === ROBOTS || options.expected.has(item.url) || reported.has(item.url)) continue;
        reported.add(item.url);
        add('unexpected', origin, item.url, item.entry.start, `${item.entry.path} (${item.entry.status}) is not an expected page`);
      }
    }
  }

  if (options.expected !== undefined) {
    const fetched = new Set<string>();
    for (const items of hosts.values()) for (const item of items) if (is2xx(item.entry.status)) fetched.add(item.url);
    for (const url of options.expected) {
      if (!fetched.has(url)) add('must-fetch', new URL(url).origin, url, null, 'expected page never fetched with a 2xx answer');
    }
  }

  const analysis = analyzeLog(log, {
    minIntervalMs: options.minIntervalMs ?? 0,
    toleranceMs: options.minIntervalMs === undefined ? 0 : tolerance,
    ignorePaths: [ROBOTS],
    maxListed: Number.MAX_SAFE_INTEGER,
  });
  const hostOrigin = (host: string): string => hostOrigins.get(host) ?? `http://${host}`;
  for (const v of analysis.concurrency.violations) {
    add('concurrency', hostOrigin(v.host), hostOrigin(v.host) + v.path, v.start, `${v.path} started while ${v.overlaps} was in flight (${v.overlapMs.toFixed(1)} ms overlap)`);
  }
  if ((options.minIntervalMs ?? 0) > 0) {
    for (const v of analysis.intervals.violations) {
      add('interval', hostOrigin(v.host), hostOrigin(v.host) + v.path, v.start, `${v.path} started ${v.intervalMs.toFixed(1)} ms after ${v.previousPath}`);
    }
  }
  if (options.duplicates !== false) {
    // A response the client abandoned (a tarpit cut at the deadline) was not a fetch: retrying it is no duplicate.
    const complete = analyzeLog(log.filter((entry) => entry.aborted !== true), { minIntervalMs: 0, ignorePaths: [ROBOTS], maxListed: Number.MAX_SAFE_INTEGER });
    for (const d of complete.duplicates.pages) {
      add('duplicate', hostOrigin(d.host), hostOrigin(d.host) + d.pageKey, null, `fetched ${d.count} times as ${d.paths.join(', ')}`);
    }
  }

  const rank = new Map<HostKind, number>(expectations.map((e, i) => [e.kind, i]));
  rank.set('normal', expectations.length);
  rank.set('private', expectations.length + 1);
  found.sort((a, b) => (rank.get(a.kind) ?? 0) - (rank.get(b.kind) ?? 0) || (a.at ?? -Infinity) - (b.at ?? -Infinity) || (a.check < b.check ? -1 : a.check > b.check ? 1 : 0));
  const counts: Partial<Record<HostileCheck, number>> = {};
  const byKind: Partial<Record<HostKind, HostileViolation[]>> = {};
  for (const v of found) {
    counts[v.check] = (counts[v.check] ?? 0) + 1;
    (byKind[v.kind] ??= []).push(v);
  }
  return {
    ok: found.length === 0,
    violations: found.slice(0, options.maxListed ?? 1000),
    violationCount: found.length,
    counts,
    byKind,
    analysis,
  };
}

type Add = (check: HostileCheck, origin: string, url: string | null, at: number | null, detail: string) => void;

/** The findings of one expectation, from its host's items in start order. */
function checkExpectation(e: HostileExpectation, items: readonly Item[], tolerance: number, add: Add): void {
  const fetched = new Set(items.filter((item) => is2xx(item.entry.status)).map((item) => item.url));
  const requested = new Set(items.map((item) => item.url));
  for (const url of e.mustFetch) {
    if (fetched.has(url)) continue;
    const tries = items.filter((item) => item.url === url).map((item) => item.entry.status);
    add('must-fetch', e.origin, url, null, tries.length === 0 ? 'never requested' : `requested ${tries.length} times, answered ${tries.join(', ')}`);
  }
  for (const url of e.mustRequest) if (!requested.has(url)) add('must-request', e.origin, url, null, 'never requested');

  const mustNot = new Set(e.mustNotFetch);
  const counts = e.limits.map(() => 0);
  let previous: Item | null = null;
  for (const item of items) {
    const { entry, url, key } = item;
    if (key !== ROBOTS && e.robotsDisallow.some((prefix) => key.startsWith(prefix))) {
      add('robots', e.origin, url, entry.start, `${entry.path} is disallowed by robots.txt (${e.robotsDisallow.join(', ')})`);
    } else if (mustNot.has(url) || e.mustNotFetchPrefixes.some((prefix) => url.startsWith(prefix))) {
      add('must-not-fetch', e.origin, url, entry.start, `${entry.path} must never be requested (answered ${entry.status})`);
    }
    if (entry.status === 404 && e.notFoundPrefixes.some((prefix) => url.startsWith(prefix))) {
      add('not-found', e.origin, url, entry.start, `${entry.path} does not exist: a link was mis-decoded or mis-resolved`);
    }
    e.limits.forEach((limit, i) => {
      if (limit.match === 'exact' ? url !== limit.url : !url.startsWith(limit.url)) return;
      counts[i] = (counts[i] as number) + 1;
      if (limit.maxBytesPerResponse !== undefined && entry.bytes > limit.maxBytesPerResponse) {
        add('bytes', e.origin, url, entry.start, `${entry.bytes} body bytes written, bound ${limit.maxBytesPerResponse}`);
      }
      if (limit.maxResponseMs !== undefined && entry.end >= 0 && duration(entry) > limit.maxResponseMs + tolerance) {
        add('duration', e.origin, url, entry.start, `open ${Math.round(duration(entry))} ms, bound ${limit.maxResponseMs}`);
      }
    });
    if (key !== ROBOTS) {
      if (e.minIntervalMs !== undefined && previous !== null && item.start - previous.start < e.minIntervalMs - tolerance) {
        add('min-interval', e.origin, url, entry.start, `${entry.path} started ${Math.round(item.start - previous.start)} ms after ${previous.entry.path}, Crawl-delay ${e.minIntervalMs} ms`);
      }
      previous = item;
    }
  }
  e.limits.forEach((limit, i) => {
    if (limit.maxRequests !== undefined && (counts[i] as number) > limit.maxRequests) {
      add('request-limit', e.origin, limit.url, null, `${counts[i]} requests ${limit.match === 'exact' ? 'for' : 'under'} ${limit.url}, bound ${limit.maxRequests}`);
    }
  });
  if (e.maxRequests !== undefined && items.length > e.maxRequests) {
    add('max-requests', e.origin, null, null, `${items.length} requests to the host, bound ${e.maxRequests}`);
  }
}
