import { isTransientStatus } from '@trawl/core';
import type { Observation } from './policy.js';

/** One visit's outcome as the fetch pipeline knows it. */
export interface VisitOutcome {
  /** HTTP status; null when there was no response (timeout, connection or DNS failure). */
  status: number | null;
  /** Hash of the body read at this visit; null when none was read (304, empty or skipped body). */
  contentHash: string | null;
  /** Hash stored from an earlier visit; null when none. */
  previousHash: string | null;
  /** Whether a 3xx response carried a Location header. */
  hasLocation: boolean;
}

/**
 * What a visit observed about the page (see `Observation`). Transient statuses are the ones the
 * fetch queue retries (408, 425, 429 and 5xx other than 501 and 505); by the time a visit is
 * recorded as failed, those retries are spent.
 */
export function observationOf(outcome: VisitOutcome): Observation {
  const { status } = outcome;
  if (status === null) return 'failed';
  if (status >= 200 && status < 300) {
    // No hash (empty or skipped body): nothing says the content changed.
    return outcome.contentHash !== null && outcome.contentHash !== outcome.previousHash ? 'changed' : 'unchanged';
  }
  if (status === 304) return 'unchanged';
  if (status >= 300 && status < 400) {
    if (!outcome.hasLocation) return 'refused';
    return status === 301 || status === 308 ? 'moved' : 'redirected';
  }
  if (status === 404 || status === 410) return 'gone';
  return isTransientStatus(status) ? 'failed' : 'refused';
}
