/** How a crawler treats an HTTP status: one definition, read by the pipeline, the politeness model and the re-crawl schedule. */
export type StatusClass = 'ok' | 'not-modified' | 'redirect' | 'retry' | 'permanent';

/**
 * Statuses that say "try again later" rather than "this is the answer": 408, 425, 429, and 5xx
 * other than 501 (Not Implemented) and 505 (HTTP Version Not Supported), which no wait mends
 * (RFC 9110 §15.6.2, §15.6.6).
 */
export function isTransientStatus(status: number): boolean {
  if (status === 408 || status === 425 || status === 429) return true;
  return status >= 500 && status < 600 && status !== 501 && status !== 505;
}

/**
 * 2xx: a page. 304: unchanged. 3xx with a Location: a redirect (its target is queued as a new
 * URL). Transient statuses: retried. Anything else (other 4xx, a 3xx without a Location, 501,
 * 505): recorded, never retried.
 */
export function classifyStatus(status: number, hasLocation: boolean): StatusClass {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 304) return 'not-modified';
  if (status >= 300 && status < 400) return hasLocation ? 'redirect' : 'permanent';
  return isTransientStatus(status) ? 'retry' : 'permanent';
}
