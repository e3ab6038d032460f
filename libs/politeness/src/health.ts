import { ErrorCode, isTransientStatus, isTrawlError } from '@trawl/core';
import type { PolitenessOptions } from './delay.js';

/** A host's health, kept in Redis with its due time so every worker sees the same. */
export interface HostHealth {
  /** Consecutive failed or throttled fetches. */
  streak: number;
  /** Current back-off term of the delay. */
  backoffMs: number;
}

export const HEALTHY: HostHealth = { streak: 0, backoffMs: 0 };

/**
 * What a fetch says about its host. Back-off is for a host in trouble; a URL that fails while
 * its host answers is that URL's problem, and its own retry delay (per attempt, in the queue)
 * deals with it without slowing the host's other pages.
 */
export type FetchOutcomeKind =
  /** A definite answer: 2xx, 3xx, 4xx other than 408/425/429, 501, 505. */
  | 'success'
  /** 429, or 503: the server asked us to slow down. */
  | 'throttled'
  /**
   * The host is in trouble: no connection (refused, reset, unreachable, connect or DNS timeout,
   * transient DNS failure), a gateway that cannot reach it (502, 504), robots.txt unavailable.
   */
  | 'error'
  /**
   * This URL failed while the host answered: 500 and other 5xx, 408, 425, a timeout waiting for
   * this URL's headers or body (a tarpit), a malformed response. Counts toward the host's
   * streak; backs the host off only from `hostFailureThreshold` failures in a row, when the
   * trouble is plainly the host's.
   */
  | 'url-error';

export function nextHealth(
  previous: HostHealth,
  outcome: FetchOutcomeKind,
  options: PolitenessOptions,
  random: () => number = Math.random,
): HostHealth {
  if (outcome === 'success') {
    if (previous.backoffMs === 0 && previous.streak === 0) return HEALTHY;
    const halved = Math.floor(previous.backoffMs / 2);
    return { streak: 0, backoffMs: halved < options.minDelayMs ? 0 : halved };
  }
  const streak = previous.streak + 1;
  if (outcome === 'url-error' && streak < options.hostFailureThreshold) return { streak, backoffMs: previous.backoffMs };
  const exponential = Math.min(options.backoffMaxMs, options.backoffBaseMs * 2 ** (streak - 1));
  // Jitter in [0.75, 1.25) so hosts that failed together do not come back together.
  const jittered = Math.min(options.backoffMaxMs, Math.round(exponential * (0.75 + random() / 2)));
  return { streak, backoffMs: Math.max(previous.backoffMs, jittered) };
}

/** What an HTTP response's status says about its host. */
export function outcomeOfStatus(status: number): FetchOutcomeKind {
  if (status === 429 || status === 503) return 'throttled';
  // RFC 9110 §15.6.3, §15.6.5: the gateway could not get an answer from the server behind it.
  if (status === 502 || status === 504) return 'error';
  return isTransientStatus(status) ? 'url-error' : 'success';
}

/** Timeout phases before the request reached the server: the host is unreachable. */
const CONNECT_PHASES = new Set(['lookup', 'connect', 'secureConnect', 'send']);

/**
 * What a failed fetch (the fetcher's TrawlError) says about its host. Timeouts while connecting
 * are the host's; timeouts waiting for a response or its body (first byte, idle socket, the
 * total deadline) are the URL's. Network failures the fetcher would retry (refused, reset,
 * unreachable, transient DNS, a response cut short) are the host's; those it would not (a
 * malformed response, a bad certificate, a corrupt body, no such host) are the URL's: waiting
 * longer mends none of them. An unknown error counts as the host's.
 *
 * An SSRF refusal contacted nothing: the caller leaves the host's health alone.
 */
export function outcomeOfError(error: unknown): FetchOutcomeKind {
  if (!isTrawlError(error)) return 'error';
  const details = error.details ?? {};
  if (error.code === ErrorCode.FetchTimeout) {
    return typeof details.phase === 'string' && CONNECT_PHASES.has(details.phase) ? 'error' : 'url-error';
  }
  if (error.code === ErrorCode.FetchNetwork) return error.action === 'retry' ? 'error' : 'url-error';
  return 'url-error';
}
