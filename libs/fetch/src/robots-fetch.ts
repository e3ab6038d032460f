import { type ErrorAction, ErrorCode, isTrawlError, sleep } from '@trawl/core';
import type { FetchResult } from './fetcher.js';

export interface RobotsFetchOptions {
  /** 3xx hops followed. Default 5 (RFC 9309 §2.3.1.2: follow at least five consecutive redirects). */
  maxRedirects?: number;
  /** Body bytes read, decoded. Default 500 KiB (RFC 9309 §2.5: parse at least 500 kibibytes). */
  maxBytes?: number;
  /**
   * Wait this long before following each redirect: every hop is another request, and the
   * politeness delay holds between requests to a host even inside one robots.txt fetch.
   */
  hopDelayMs?: number;
  signal?: AbortSignal;
  /** Proxy tiers the host has been moved up after being blocked: robots.txt goes the way its pages go. */
  tierLevel?: number;
}

export type RobotsFetchResult =
  | {
      kind: 'response';
      /** The last response's status: a 3xx when the hops ran out (or it had no usable Location). */
      status: number;
      body: Buffer;
      /** The URL the last response came from. */
      finalUrl: string;
      /** Redirects followed. */
      redirects: number;
      truncated: boolean;
    }
  | {
      kind: 'error';
      /** The TrawlError code: ERR_FETCH_TIMEOUT, ERR_FETCH_NETWORK, ERR_SSRF_BLOCKED, ERR_URL_*. */
      code: string;
      message: string;
      /** What the error says happens next (an unreachable robots.txt is not a missing one). */
      action: ErrorAction;
    };

export const DEFAULT_ROBOTS_MAX_REDIRECTS = 5;
export const DEFAULT_ROBOTS_MAX_BYTES = 500 * 1024;

/** One GET without following redirects, body capped at `maxBytes`: the Fetcher's, per hop. */
export type FetchOnce = (url: string, maxBytes: number, signal: AbortSignal | undefined) => Promise<FetchResult>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Fetches a robots.txt, following redirects itself (unlike page fetches, whose redirects go back
 * through the frontier): RFC 9309 makes the rules at the end of the chain the host's rules.
 * Each hop is a full fetch (SSRF guard, timeouts); a loop ends at the cap. Never throws: every
 * failure is `kind: 'error'` with the TrawlError's code, for the caller to map to RFC 9309's
 * "unreachable" (disallow all) or "unavailable" (allow all).
 */
export async function fetchRobotsFile(
  fetchOnce: FetchOnce,
  robotsUrl: string,
  options: RobotsFetchOptions = {},
): Promise<RobotsFetchResult> {
  const maxRedirects = options.maxRedirects ?? DEFAULT_ROBOTS_MAX_REDIRECTS;
  const maxBytes = options.maxBytes ?? DEFAULT_ROBOTS_MAX_BYTES;
  if (!Number.isSafeInteger(maxRedirects) || maxRedirects < 0 || !Number.isSafeInteger(maxBytes) || maxBytes <= 0) {
    return {
      kind: 'error',
      code: ErrorCode.ConfigInvalid,
      message: `fetchRobots: maxRedirects must be an integer >= 0 and maxBytes > 0, got ${maxRedirects} and ${maxBytes}`,
      action: 'fatal',
    };
  }
  let url = robotsUrl;
  let redirects = 0;
  try {
    for (;;) {
      const result = await fetchOnce(url, maxBytes, options.signal);
      const next = REDIRECTS.has(result.status) ? result.location : null;
      if (next === null || redirects >= maxRedirects) {
        return {
          kind: 'response',
          status: result.status,
          body: result.body,
          finalUrl: url,
          redirects,
          truncated: result.truncated,
        };
      }
      url = next;
      redirects++;
      if (options.hopDelayMs) await sleep(options.hopDelayMs, options.signal);
    }
  } catch (error) {
    if (isTrawlError(error)) return { kind: 'error', code: error.code, message: error.message, action: error.action };
    const message = error instanceof Error ? error.message : String(error);
    return { kind: 'error', code: ErrorCode.FetchNetwork, message: `robots.txt fetch of ${url} failed: ${message}`, action: 'retry' };
  }
}
