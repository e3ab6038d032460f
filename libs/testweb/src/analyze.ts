/**
 * Judges a crawl from the server's side: politeness (one request in flight per host, starts at
 * least minIntervalMs apart), duplicate fetches, coverage against the ground truth. Pure: takes
 * a log, returns numbers. One sort per host, so 100k entries cost milliseconds.
 */
import type { RequestLogEntry } from './log.js';

export interface AnalyzeLogOptions {
  /** Consecutive request starts to one host closer than this are violations. */
  minIntervalMs: number;
  /** Slack subtracted from minIntervalMs (timer and network jitter); default 0. */
  toleranceMs?: number;
  /** Canonical URLs a correct crawl fetches (usually TestWeb.groundTruth). */
  expected?: ReadonlySet<string>;
  /** Origin an entry's pageKey is appended to for coverage; default `http://${entry.host}`. */
  origin?: (entry: RequestLogEntry) => string;
  /** pageKeys (or raw paths) left out of duplicate and coverage checks, e.g. '/robots.txt'. */
  ignorePaths?: readonly string[];
  /** Longest list reported for each kind of finding; counts are always exact. Default 1000. */
  maxListed?: number;
}

export interface ConcurrencyViolation {
  host: string;
  hostIndex: number;
  /** The request that started while another to the same host was in flight. */
  path: string;
  start: number;
  /** The in-flight request it overlapped (the one finishing last). */
  overlaps: string;
  overlapMs: number;
}

export interface IntervalViolation {
  host: string;
  hostIndex: number;
  previousPath: string;
  path: string;
  previousStart: number;
  start: number;
  intervalMs: number;
}

export interface DuplicateFetch {
  host: string;
  hostIndex: number;
  pageKey: string;
  /** Successful fetches of this page. */
  count: number;
  /** The raw request paths, in start order (shows which link form the crawler failed to collapse). */
  paths: string[];
}

export interface HostAnalysis {
  host: string;
  hostIndex: number;
  requests: number;
  robotsRequests: number;
  maxConcurrency: number;
  concurrencyViolations: number;
  intervalViolations: number;
  /** Smallest start-to-start gap; null with fewer than two requests. */
  minIntervalMs: number | null;
  /** Smallest start − (latest earlier end); negative when requests overlapped. */
  minIdleGapMs: number | null;
  firstStart: number;
  lastEnd: number | null;
  statuses: Record<number, number>;
}

export interface LogAnalysis {
  requests: number;
  robotsRequests: number;
  /** Entries whose response had not finished (end = -1); they count as open forever. */
  inFlight: number;
  bytes: number;
  hosts: number;
  /** Whether the high-resolution clocks (startHr/endHr) were used for timing. */
  highResolution: boolean;
  perHost: HostAnalysis[];
  concurrency: { maxPerHost: number; maxOverall: number; violationCount: number; violations: ConcurrencyViolation[] };
  intervals: {
    minIntervalMs: number | null;
    minIdleGapMs: number | null;
    violationCount: number;
    violations: IntervalViolation[];
  };
  /** Pages fetched successfully more than once per host; `extraFetches` counts the fetches beyond the first. */
  duplicates: { pageCount: number; extraFetches: number; pages: DuplicateFetch[] };
  coverage: {
    expected: number;
    fetched: number;
    missingCount: number;
    missing: string[];
    unexpectedCount: number;
    unexpected: string[];
  } | null;
  /**
   * Requests for linked binary files (log `resource: 'file'`): a crawler that skips non-HTML by
   * extension makes none. They are left out of duplicates and coverage.
   */
  files: { requests: number; distinct: number; bytes: number; byExtension: Record<string, number> };
  /** Requests for sitemaps (left out of duplicates and coverage, like robots.txt). */
  sitemapRequests: number;
  /** Conditional requests (If-None-Match / If-Modified-Since) and how many were answered 304. */
  conditional: { requests: number; notModified: number };
  /** Finished requests by status; 0 = the connection closed before any response header. */
  statuses: Record<number, number>;
  firstStart: number | null;
  lastEnd: number | null;
  durationMs: number;
  /** No politeness violation, no duplicate, and full exact coverage when `expected` was given. */
  ok: boolean;
}

interface Timed {
  entry: RequestLogEntry;
  start: number;
  /** Infinity while in flight. */
  end: number;
}

const ROBOTS = '/robots.txt';
/** Not pages: never duplicates, never coverage (a page's script is fetched by each renderer that needs it). */
const isAsset = (entry: RequestLogEntry): boolean => entry.resource === 'file' || entry.resource === 'sitemap' || entry.resource === 'script';
const isSuccess = (status: number): boolean => status >= 200 && status < 300;
const inFlight = (entry: RequestLogEntry): boolean => entry.end < 0;

/** Peak number of overlapping [start, end) intervals, from both ends sorted. */
function peakOverlap(starts: Float64Array, ends: Float64Array): number {
  starts.sort();
  ends.sort();
  let peak = 0;
  let ended = 0;
  for (let i = 0; i < starts.length; i++) {
    const start = starts[i] as number;
    while (ended < ends.length && (ends[ended] as number) <= start) ended++;
    peak = Math.max(peak, i + 1 - ended);
  }
  return peak;
}

function bump(histogram: Record<number, number>, status: number): void {
  histogram[status] = (histogram[status] ?? 0) + 1;
}

const minOrNull = (a: number | null, b: number): number => (a === null ? b : Math.min(a, b));

export function analyzeLog(log: readonly RequestLogEntry[], options: AnalyzeLogOptions): LogAnalysis {
  const maxListed = options.maxListed ?? 1000;
  const threshold = options.minIntervalMs - (options.toleranceMs ?? 0);
  const origin = options.origin ?? ((entry: RequestLogEntry) => `http://${entry.host}`);
  const ignored = new Set(options.ignorePaths ?? []);
  const isIgnored = (entry: RequestLogEntry): boolean =>
    isAsset(entry) || ignored.has(entry.path) || (entry.pageKey !== null && ignored.has(entry.pageKey));
  const highResolution = log.length > 0 && log.every((e) => (e.startHr ?? -1) >= 0 && (inFlight(e) || (e.endHr ?? -1) >= 0));

  const byHost = new Map<string, Timed[]>();
  const starts = new Float64Array(log.length);
  const ends = new Float64Array(log.length);
  const statuses: Record<number, number> = {};
  let robotsRequests = 0;
  let open = 0;
  let bytes = 0;
  let firstStart: number | null = null;
  let lastEnd: number | null = null;
  const files = { requests: 0, distinct: 0, bytes: 0, byExtension: {} as Record<string, number> };
  const distinctFiles = new Set<string>();
  let sitemapRequests = 0;
  const conditional = { requests: 0, notModified: 0 };
  log.forEach((entry, i) => {
    if (entry.resource === 'file') {
      files.requests++;
      files.bytes += entry.bytes;
      distinctFiles.add(`${entry.host}${entry.pageKey ?? entry.path}`);
      const extension = /\.([a-z0-9]+)$/.exec(entry.pageKey ?? entry.path)?.[1] ?? '';
      files.byExtension[extension] = (files.byExtension[extension] ?? 0) + 1;
    } else if (entry.resource === 'sitemap') sitemapRequests++;
    if (entry.conditional === true) {
      conditional.requests++;
      if (entry.status === 304) conditional.notModified++;
    }
    const running = inFlight(entry);
    const start = highResolution ? (entry.startHr as number) : entry.start;
    const end = running ? Infinity : highResolution ? (entry.endHr as number) : entry.end;
    starts[i] = start;
    ends[i] = end;
    let group = byHost.get(entry.host);
    if (group === undefined) byHost.set(entry.host, (group = []));
    group.push({ entry, start, end });
    if ((entry.pageKey ?? entry.path) === ROBOTS) robotsRequests++;
    if (running) open++;
    else {
      bump(statuses, entry.status);
      lastEnd = lastEnd === null ? end : Math.max(lastEnd, end);
    }
    bytes += entry.bytes;
    firstStart = minOrNull(firstStart, start);
  });

  const perHost: HostAnalysis[] = [];
  const concurrencyViolations: ConcurrencyViolation[] = [];
  const intervalViolations: IntervalViolation[] = [];
  const duplicatePages: DuplicateFetch[] = [];
  let concurrencyCount = 0;
  let intervalCount = 0;
  let duplicatePageCount = 0;
  let extraFetches = 0;
  let minInterval: number | null = null;
  let minIdle: number | null = null;

  for (const [host, items] of byHost) {
    items.sort((a, b) => a.start - b.start);
    const first = items[0] as Timed;
    const hostIndex = first.entry.hostIndex;
    const stats: HostAnalysis = {
      host,
      hostIndex,
      requests: items.length,
      robotsRequests: 0,
      maxConcurrency: peakOverlap(
        items.reduce((acc, t, i) => ((acc[i] = t.start), acc), new Float64Array(items.length)),
        items.reduce((acc, t, i) => ((acc[i] = t.end), acc), new Float64Array(items.length)),
      ),
      concurrencyViolations: 0,
      intervalViolations: 0,
      minIntervalMs: null,
      minIdleGapMs: null,
      firstStart: first.start,
      lastEnd: null,
      statuses: {},
    };
    // First successful fetch per pageKey; raw paths are collected only once a page repeats.
    const firstFetch = new Map<string, string>();
    const repeated = new Map<string, string[]>();
    let latest: Timed | null = null;
    let previous: Timed | null = null;
    for (const item of items) {
      const { entry } = item;
      if ((entry.pageKey ?? entry.path) === ROBOTS) stats.robotsRequests++;
      if (!inFlight(entry)) {
        bump(stats.statuses, entry.status);
        stats.lastEnd = stats.lastEnd === null ? item.end : Math.max(stats.lastEnd, item.end);
      }
      if (previous !== null) {
        const interval = item.start - previous.start;
        stats.minIntervalMs = minOrNull(stats.minIntervalMs, interval);
        if (interval < threshold) {
          stats.intervalViolations++;
          if (intervalViolations.length < maxListed) {
            intervalViolations.push({
              host,
              hostIndex,
              previousPath: previous.entry.path,
              path: entry.path,
              previousStart: previous.start,
              start: item.start,
              intervalMs: interval,
            });
          }
        }
      }
      if (latest !== null) {
        if (Number.isFinite(latest.end)) stats.minIdleGapMs = minOrNull(stats.minIdleGapMs, item.start - latest.end);
        if (item.start < latest.end) {
          stats.concurrencyViolations++;
          if (concurrencyViolations.length < maxListed) {
            concurrencyViolations.push({
              host,
              hostIndex,
              path: entry.path,
              start: item.start,
              overlaps: latest.entry.path,
              overlapMs: Math.min(latest.end, item.end) - item.start,
            });
          }
        }
      }
      if (latest === null || item.end > latest.end) latest = item;
      previous = item;
      if (entry.pageKey !== null && isSuccess(entry.status) && !isIgnored(entry)) {
        const firstPath = firstFetch.get(entry.pageKey);
        if (firstPath === undefined) firstFetch.set(entry.pageKey, entry.path);
        else {
          const paths = repeated.get(entry.pageKey);
          if (paths === undefined) repeated.set(entry.pageKey, [firstPath, entry.path]);
          else paths.push(entry.path);
        }
      }
    }
    for (const [pageKey, paths] of repeated) {
      duplicatePageCount++;
      extraFetches += paths.length - 1;
      if (duplicatePages.length < maxListed) duplicatePages.push({ host, hostIndex, pageKey, count: paths.length, paths });
    }
    concurrencyCount += stats.concurrencyViolations;
    intervalCount += stats.intervalViolations;
    if (stats.minIntervalMs !== null) minInterval = minOrNull(minInterval, stats.minIntervalMs);
    if (stats.minIdleGapMs !== null) minIdle = minOrNull(minIdle, stats.minIdleGapMs);
    perHost.push(stats);
  }
  perHost.sort((a, b) => a.hostIndex - b.hostIndex || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));

  let coverage: LogAnalysis['coverage'] = null;
  if (options.expected !== undefined) {
    const expected = options.expected;
    const fetched = new Set<string>();
    const unexpected = new Set<string>();
    for (const entry of log) {
      if (isIgnored(entry) || (entry.pageKey ?? entry.path) === ROBOTS) continue;
      const url = origin(entry) + (entry.pageKey ?? entry.path);
      if (!expected.has(url)) unexpected.add(url);
      else if (isSuccess(entry.status)) fetched.add(url);
    }
    const missing = [...expected].filter((url) => !fetched.has(url));
    coverage = {
      expected: expected.size,
      fetched: fetched.size,
      missingCount: missing.length,
      missing: missing.sort().slice(0, maxListed),
      unexpectedCount: unexpected.size,
      unexpected: [...unexpected].sort().slice(0, maxListed),
    };
  }

  const first = firstStart as number | null;
  const last = lastEnd as number | null;
  return {
    requests: log.length,
    robotsRequests,
    inFlight: open,
    bytes,
    hosts: byHost.size,
    highResolution,
    perHost,
    concurrency: {
      maxPerHost: perHost.reduce((max, h) => Math.max(max, h.maxConcurrency), 0),
      maxOverall: peakOverlap(starts, ends),
      violationCount: concurrencyCount,
      violations: concurrencyViolations,
    },
    intervals: { minIntervalMs: minInterval, minIdleGapMs: minIdle, violationCount: intervalCount, violations: intervalViolations },
    duplicates: { pageCount: duplicatePageCount, extraFetches, pages: duplicatePages },
    coverage,
    files: { ...files, distinct: distinctFiles.size },
    sitemapRequests,
    conditional,
    statuses,
    firstStart: first,
    lastEnd: last,
    durationMs: first !== null && last !== null ? last - first : 0,
    ok:
      concurrencyCount === 0 &&
      intervalCount === 0 &&
      duplicatePageCount === 0 &&
      (coverage === null || (coverage.missingCount === 0 && coverage.unexpectedCount === 0)),
  };
}
