import { type ErrorAction, ErrorCode, isTrawlError, TrawlError } from '@trawl/core';
import { TimeoutError } from 'got';
import type { FetchTimeouts } from './options.js';

/**
 * Every code a fetch can fail with. `ERR_SSRF_BLOCKED` is this lib's own (the address is not
 * one the crawler may connect to; action `skip`): @trawl/core's `ErrorCode` union does not list
 * it, so compare `error.code` as a string (`(error.code as string) === FetchErrorCode.SsrfBlocked`).
 */
export const FetchErrorCode = {
  Timeout: ErrorCode.FetchTimeout,
  Network: ErrorCode.FetchNetwork,
  UrlInvalid: ErrorCode.UrlInvalid,
  UrlScheme: ErrorCode.UrlScheme,
  SsrfBlocked: 'ERR_SSRF_BLOCKED',
  /** A proxy failed (refused, reset, timed out, 407, a refused tunnel): the target was never reached. Retry. */
  ProxyFailed: ErrorCode.ProxyFailed,
  /** Every proxy of the host's tier is out after failing: retry at `retryAt`. */
  ProxyUnavailable: ErrorCode.ProxyUnavailable,
} as const;
export type FetchErrorCode = (typeof FetchErrorCode)[keyof typeof FetchErrorCode];

/**
 * A TrawlError with one of this lib's codes. The cast is the one place where a code outside
 * @trawl/core's union enters a TrawlError; at run time a code is a string either way.
 */
export function fetchError(code: FetchErrorCode, message: string, options: ConstructorParameters<typeof TrawlError>[2]): TrawlError {
  return new TrawlError(code as ErrorCode, message, options);
}

/** What each DNS error code means, for messages. c-ares (dns.resolve*) and getaddrinfo codes. */
const DNS_MEANING: Record<string, string> = {
  ENOTFOUND: 'no such host (NXDOMAIN)',
  ENODATA: 'the name has no address records',
  ENONAME: 'no such host',
  EAI_NONAME: 'no such host',
  EBADNAME: 'malformed hostname',
  ESERVFAIL: 'the DNS server failed (SERVFAIL)',
  ETIMEOUT: 'the DNS query timed out',
  EAI_AGAIN: 'temporary DNS failure',
  EAI_FAIL: 'non-recoverable DNS failure',
  EREFUSED: 'the DNS server refused the query',
  ECONNREFUSED: 'the DNS server is unreachable',
  EBADRESP: 'malformed DNS reply',
  EFORMERR: 'the DNS server rejected the query as malformed',
  ENOTIMP: 'the DNS server does not implement the query',
  ECANCELLED: 'the DNS query was cancelled',
  EDESTRUCTION: 'the DNS channel was destroyed',
};

/**
 * Answers that say the name has no address: the host does not exist, and retrying within the
 * negative-cache hour is pointless. Everything else (SERVFAIL, timeouts, EAI_AGAIN) is transient.
 */
export function dnsMeansNoSuchHost(code: string): boolean {
  return code === 'ENOTFOUND' || code === 'ENODATA' || code === 'ENONAME' || code === 'EAI_NONAME' || code === 'EBADNAME';
}

/** An error from a resolver or a lookup function, recognised by its syscall or its code. */
function dnsErrorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const { code, syscall, cause } = current as { code?: unknown; syscall?: unknown; cause?: unknown };
    if (typeof code === 'string') {
      const bySyscall = typeof syscall === 'string' && /^(getaddrinfo|query|resolve|lookup)/i.test(syscall);
      const byCode = code !== 'ECONNREFUSED' && code !== 'ECANCELLED' && code in DNS_MEANING;
      if (bySyscall || byCode) return code;
    }
    current = cause;
  }
  return undefined;
}

/** The innermost TrawlError in a cause chain (the SSRF guard's, raised under got). */
function innerTrawlError(error: unknown): TrawlError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    if (isTrawlError(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Our timeout phases, named after got's timeout events, and the setting behind each. */
const PHASE_OF_GOT_EVENT: Record<string, { phase: string; setting: keyof FetchTimeouts }> = {
  lookup: { phase: 'DNS lookup', setting: 'connectMs' },
  connect: { phase: 'TCP connect', setting: 'connectMs' },
  secureConnect: { phase: 'TLS handshake', setting: 'connectMs' },
  send: { phase: 'sending the request', setting: 'connectMs' },
  response: { phase: 'first byte (response headers)', setting: 'firstByteMs' },
  socket: { phase: 'idle socket (no bytes received)', setting: 'idleMs' },
  request: { phase: 'total request deadline', setting: 'totalMs' },
};

/**
 * A response the server will send the same way next time: malformed HTTP, a bad certificate,
 * a body that does not decompress. Retrying would only repeat it.
 */
function isPermanent(code: string): boolean {
  return (
    code.startsWith('HPE_') || // llhttp: malformed response
    code.startsWith('CERT_') ||
    code.startsWith('ERR_TLS_') ||
    code.startsWith('ERR_SSL_') ||
    code.startsWith('UNABLE_TO_') ||
    code === 'DEPTH_ZERO_SELF_SIGNED_CERT' ||
    code === 'SELF_SIGNED_CERT_IN_CHAIN' ||
    code.startsWith('Z_') || // zlib: corrupt gzip/deflate
    code.startsWith('ERR__ERROR_') || // brotli decoder errors
    code === 'ERR_BROTLI_DECOMPRESSION_FAILED'
  );
}

/**
 * Turns whatever got (or the socket under it) threw into a TrawlError that says what happens
 * next. Timeouts and network failures are `retry` (the queue is the one layer that retries);
 * responses that would fail the same way again are `fail`. The original error is the `cause`.
 */
export function toFetchError(error: unknown, url: string, timeouts: FetchTimeouts, signal?: AbortSignal): TrawlError {
  if (signal?.aborted) {
    const reason: unknown = signal.reason;
    const timedOut = reason instanceof Error && reason.name === 'TimeoutError';
    return new TrawlError(
      timedOut ? ErrorCode.FetchTimeout : ErrorCode.FetchNetwork,
      timedOut ? `fetch of ${url} hit the caller's deadline` : `fetch of ${url} was aborted by the caller`,
      { action: 'retry', cause: error, details: { url, phase: 'caller', aborted: true } },
    );
  }
  if (error instanceof TimeoutError) {
    const known = PHASE_OF_GOT_EVENT[error.event];
    const phase = known?.phase ?? error.event;
    const limit = known === undefined ? undefined : timeouts[known.setting];
    return new TrawlError(
      ErrorCode.FetchTimeout,
      `fetch of ${url} timed out waiting for ${phase}${limit === undefined ? '' : ` (${known?.setting} ${limit})`}`,
      { action: 'retry', cause: error, details: { url, phase: error.event, timeoutMs: limit } },
    );
  }
  const inner = innerTrawlError(error);
  if (inner !== undefined) {
    return new TrawlError(inner.code, `fetch of ${url} failed: ${inner.message}`, {
      action: inner.action,
      cause: inner,
      ...(inner.retryAt === undefined ? {} : { retryAt: inner.retryAt }),
      details: { ...inner.details, url },
    });
  }
  const dnsCode = dnsErrorCode(error);
  if (dnsCode !== undefined) return dnsFailure(error, dnsCode, url);
  const code = errorCode(error) ?? 'UNKNOWN';
  const action: ErrorAction = isPermanent(code) ? 'fail' : 'retry';
  const message = error instanceof Error ? error.message : String(error);
  return new TrawlError(ErrorCode.FetchNetwork, `fetch of ${url} failed: ${code}: ${message}`, {
    action,
    cause: error,
    details: { url, errno: code },
  });
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  // got wraps socket errors in RequestError, copying the code; prefer the innermost one.
  const inner = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  if (typeof inner === 'string') return inner;
  return typeof code === 'string' ? code : undefined;
}

function dnsFailure(error: unknown, code: string, url: string): TrawlError {
  const facts = innermost(error) as { hostname?: unknown; cached?: unknown; retryAt?: unknown };
  const hostname = typeof facts.hostname === 'string' ? facts.hostname : safeHostname(url);
  const cached = facts.cached === true;
  const retryAt = typeof facts.retryAt === 'number' ? facts.retryAt : undefined;
  const noSuchHost = dnsMeansNoSuchHost(code);
  const meaning = DNS_MEANING[code] ?? 'DNS lookup failed';
  return new TrawlError(
    ErrorCode.FetchNetwork,
    `fetch of ${url} failed: DNS lookup of ${hostname} failed: ${code} (${meaning})${cached ? ' [negative cache]' : ''}`,
    {
      action: noSuchHost ? 'skip' : 'retry',
      cause: error,
      ...(retryAt === undefined || noSuchHost ? {} : { retryAt }),
      details: { url, errno: code, hostname, dns: true, cached },
    },
  );
}

/** The deepest error in a cause chain: the resolver's own, with its hostname and flags. */
function innermost(error: unknown): object {
  let current: unknown = error;
  for (let depth = 0; depth < 4; depth++) {
    const cause = typeof current === 'object' && current !== null ? (current as { cause?: unknown }).cause : undefined;
    if (typeof cause !== 'object' || cause === null) break;
    current = cause;
  }
  return typeof current === 'object' && current !== null ? current : {};
}

function safeHostname(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
}
