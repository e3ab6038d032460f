import { type ErrorAction, isTrawlError } from '@trawl/core';

/** How an HTTP status is handled. */
export type StatusClass = 'ok' | 'not-modified' | 'redirect' | 'retry' | 'permanent';

/**
 * 2xx: a page. 304: unchanged. 3xx with a Location: a redirect (its target is queued as a new
 * URL). 408, 425, 429 and most 5xx: transient, retried. Other 4xx (and 501, 505): recorded,
 * never retried.
 */
export function classifyStatus(status: number, hasLocation: boolean): StatusClass {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 304) return 'not-modified';
  if (status >= 300 && status < 400) return hasLocation ? 'redirect' : 'permanent';
  if (status === 408 || status === 425 || status === 429) return 'retry';
  if (status >= 500 && status !== 501 && status !== 505) return 'retry';
  return 'permanent';
}

/** The action an error asks for; unknown errors are treated as transient. */
export function errorAction(error: unknown): ErrorAction {
  return isTrawlError(error) ? error.action : 'retry';
}
