/** The hostile web's vocabulary: its kinds of host, what the crawler promises, what a host expects. */

export const HOSTILE_KINDS = [
  'calendar-trap',
  'redirects',
  'throttle-429',
  'throttle-429-bare',
  'unavailable-503',
  'unavailable-503-bare',
  'always-500',
  'tarpit',
  'huge-page',
  'gzip-bomb',
  'encodings',
  'robots-404',
  'robots-500',
  'robots-timeout',
  'robots-redirect',
  'robots-huge',
  'robots-crawl-delay',
  'robots-disallow',
  'meta-robots',
] as const;

/**
 * Hosts whose pages carry poisoned values (NUL, lone surrogates, a 200 KB URL, bad schemes).
 * Kept apart from HOSTILE_KINDS so suites that run every hostile kind opt in to them.
 */
export const POISON_KINDS = ['poison', 'poison-canonical'] as const;

export type HostileKind = (typeof HOSTILE_KINDS)[number] | (typeof POISON_KINDS)[number];

/**
 * What the crawler under test promises. Expectations are computed from it, so a test that runs
 * the crawler with other settings passes the same values here. Defaults are trawl's.
 */
export interface CrawlerLimits {
  /** Redirects followed from one URL (trawl: 5). */
  maxRedirects: number;
  /** Decoded body cap in bytes; the rest is not read (trawl: 10 MiB). */
  maxBodyBytes: number;
  /** Longest a single fetch may take, whatever the server does (TRAWL_FETCH_DEADLINE_MS: 60 s). */
  fetchDeadlineMs: number;
  /** Tries per URL before dead-lettering (TRAWL_ATTEMPTS: 4). */
  attempts: number;
  /** robots.txt bytes parsed; RFC 9309 §2.5 requires at least 500 KiB (512,000). */
  robotsMaxBytes: number;
  /** Least back-off after a 429/503 without Retry-After; 0 = not checked. */
  minBackoffMs: number;
  /** The crawler's product token for `<meta name="…">` robots directives. */
  robotsToken: string;
}

export const DEFAULT_CRAWLER_LIMITS: Readonly<CrawlerLimits> = Object.freeze({
  maxRedirects: 5,
  maxBodyBytes: 10 * 1024 * 1024,
  fetchDeadlineMs: 60_000,
  attempts: 4,
  robotsMaxBytes: 500 * 1024,
  minBackoffMs: 0,
  robotsToken: 'trawl',
});

/** Bounds on the requests for one URL, or under one URL prefix. */
export interface PathLimit {
  /** Absolute canonical URL, or URL prefix (origin + path prefix), compared with each request's canonical URL. */
  url: string;
  match: 'exact' | 'prefix';
  /** Requests matching at most, whatever their answers (retries included). */
  maxRequests?: number;
  /** Body bytes the server handed to the socket for one response, at most. */
  maxBytesPerResponse?: number;
  /** From request arrival to response end or client disconnect, at most. */
  maxResponseMs?: number;
}

/**
 * What a correct crawler does on one hostile host, as data a test checks against the log
 * (analyzeHostile does all of it). URLs are canonical in the server's own sense (requestKey).
 */
export interface HostileExpectation {
  kind: HostileKind;
  hostIndex: number;
  origin: string;
  /** URLs fetched with a 2xx answer at least once. */
  mustFetch: string[];
  /** URLs requested at least once, whatever the answer (the tarpit, the bomb, the page that is always 500). */
  mustRequest: string[];
  /** URLs never requested (exact). The private server's URL is listed too; analyzeHostile checks it through the private log. */
  mustNotFetch: string[];
  /** URL prefixes (origin + path prefix) never requested. */
  mustNotFetchPrefixes: string[];
  /**
   * Path prefixes robots.txt disallows as served to the crawler; '/' = everything but robots.txt
   * itself (robots-500, robots-timeout: RFC 9309 §2.3.1.4, unreachable means disallow all).
   */
  robotsDisallow: string[];
  /** Requests to the host at most, robots.txt included (the calendar trap's bound). */
  maxRequests?: number;
  /** Consecutive requests to the host (robots.txt fetches aside: the delay is learned from them) start at least this far apart. */
  minIntervalMs?: number;
  /** After a response with this status, the next request to the host starts at least this long after that response ended. */
  minGapAfterStatusMs?: Record<number, number>;
  /** The Retry-After the host sends, in ms (each such response also carries the exact `notBefore` in the log). */
  retryAfterMs?: number;
  /** Per-URL or per-prefix bounds: request counts, bytes per response, response duration. */
  limits: PathLimit[];
  /** URL prefixes under which a 404 is a violation: every link there exists, so a 404 means a mis-decoded link. */
  notFoundPrefixes: string[];
  notes: string;
}
