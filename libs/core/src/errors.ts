/**
 * Every error trawl raises has a stable code and says what should happen next. Exactly one
 * function (in the crawl pipeline) turns the action into a queue action.
 */
export type ErrorAction =
  /** Transient: try the same URL again later, through the host gate. */
  | 'retry'
  /** Not now: the host is busy or not yet due; run again at `retryAfterMs`. Not an attempt. */
  | 'defer'
  /** Permanent for this URL: record the reason, never retry (robots, scope, 404, type). */
  | 'skip'
  /** Give up on this URL: dead-letter it with the reason. */
  | 'fail'
  /** The process cannot go on (bad config, lost database): stop. */
  | 'fatal';

export const ErrorCode = {
  ConfigInvalid: 'ERR_CONFIG_INVALID',
  UrlInvalid: 'ERR_URL_INVALID',
  UrlScheme: 'ERR_URL_SCHEME',
  UrlTooLong: 'ERR_URL_TOO_LONG',
  JobDataInvalid: 'ERR_JOB_DATA_INVALID',
  FetchTimeout: 'ERR_FETCH_TIMEOUT',
  FetchNetwork: 'ERR_FETCH_NETWORK',
  HttpServerError: 'ERR_HTTP_5XX',
  HttpThrottled: 'ERR_HTTP_429',
  /** The host answered like one refusing this crawler (403, 429 without Retry-After, a challenge page, a reset): tried again, through a higher proxy tier once the host is judged blocked. */
  HttpBlocked: 'ERR_HTTP_BLOCKED',
  TooManyRedirects: 'ERR_TOO_MANY_REDIRECTS',
  ContentType: 'ERR_CONTENT_TYPE',
  RobotsDisallowed: 'ERR_ROBOTS_DISALLOWED',
  RobotsUnavailable: 'ERR_ROBOTS_UNAVAILABLE',
  CrawlDelayTooLong: 'ERR_CRAWL_DELAY_TOO_LONG',
  SsrfBlocked: 'ERR_SSRF_BLOCKED',
  /** A proxy failed before the target was reached (refused, reset, timed out, 407, a refused tunnel). */
  ProxyFailed: 'ERR_PROXY_FAILED',
  /** Every proxy of the host's tier is out after failing: nothing reached the host; retry at `retryAt`. */
  ProxyUnavailable: 'ERR_PROXY_UNAVAILABLE',
  Trap: 'ERR_TRAP',
  /** The frontier refused a discovered URL: its host has had TRAWL_MAX_URLS_PER_HOST URLs queued. */
  HostBudget: 'ERR_HOST_BUDGET',
  /** The frontier refused a discovered URL: its path has had TRAWL_MAX_QUERY_VARIANTS query variants queued. */
  QueryVariants: 'ERR_QUERY_VARIANTS',
  /** Redis lost the crawl's data (its namespace settings are gone) while PostgreSQL still has its URLs. */
  NamespaceWiped: 'ERR_NAMESPACE_WIPED',
  Parse: 'ERR_PARSE',
  Store: 'ERR_STORE',
  /** The content store's bucket does not exist (fatal: the operator must create it or fix the name). */
  StoreBucketMissing: 'ERR_STORE_BUCKET_MISSING',
  /** The content store refused our credentials or permissions (fatal). */
  StoreAccessDenied: 'ERR_STORE_ACCESS_DENIED',
  Database: 'ERR_DATABASE',
  EmbeddedStart: 'ERR_EMBEDDED_START',
  ServerUnreachable: 'ERR_SERVER_UNREACHABLE',
  /** The process stage's thread could not start, or died (fatal: its pages wait for another process stage). */
  ProcessThread: 'ERR_PROCESS_THREAD',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface TrawlErrorOptions {
  action: ErrorAction;
  cause?: unknown;
  /** For `defer` (and `retry` with a server-given Retry-After): when to try again, epoch ms. */
  retryAt?: number;
  /** Extra structured facts for logs and the dead-letter reason. */
  details?: Record<string, unknown>;
}

export class TrawlError extends Error {
  readonly code: ErrorCode;
  readonly action: ErrorAction;
  readonly retryAt: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: TrawlErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TrawlError';
    this.code = code;
    this.action = options.action;
    this.retryAt = options.retryAt;
    this.details = options.details;
  }
}

export const isTrawlError = (error: unknown): error is TrawlError => error instanceof TrawlError;

/** A short, single-line reason for logs and the dead-letter queue: `CODE: message`. */
export function describeError(error: unknown): string {
  if (isTrawlError(error)) return `${error.code}: ${error.message}`;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
