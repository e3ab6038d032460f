import { type ErrorAction, ErrorCode, TrawlError } from '@trawl/core';
import { TimeoutError } from 'got';
import type { FetchTimeouts } from './options.js';

/** Our timeout phases, named after `FetchTimeouts`, for each of got's timeout events. */
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
