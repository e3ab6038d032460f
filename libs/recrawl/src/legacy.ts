import { observationOf } from './observation.js';
import { DEFAULT_RECRAWL, planRecrawl, type RecrawlOptions, type RecrawlState } from './policy.js';

/**
 * The page record as callers that predate the change statistics read it: the stored hash and
 * estimate, plus whichever `RecrawlState` fields they already keep.
 */
export type PageHistory = {
  contentHash: string | null;
  changeFrequencyS: number | null;
  lastChangedAt: number | null;
} & Partial<RecrawlState>;

export interface RecrawlDecision {
  changed: boolean;
  /** The estimated change interval, seconds; null while no change has been seen. */
  changeFrequencyS: number | null;
  lastChangedAt: number;
  nextCrawlAt: number;
}

/**
 * @deprecated Use `planRecrawl` with the page's stored `RecrawlState` and an `Observation`.
 * Kept for callers that store only the hash and the estimate: a successful fetch with
 * `contentHash`. Without the stored statistics (`checkedAt`, the four sums, `intervalS`) every
 * visit looks like the first one, so the interval stays at `initialIntervalS`.
 */
export function nextCrawl(
  previous: PageHistory | null,
  contentHash: string | null,
  now: number,
  options: RecrawlOptions = DEFAULT_RECRAWL,
  random: () => number = Math.random,
): RecrawlDecision {
  const state: RecrawlState | null = previous && {
    visits: previous.visits ?? 0,
    changes: previous.changes ?? 0,
    changedS: previous.changedS ?? 0,
    unchangedS: previous.unchangedS ?? 0,
    checkedAt: previous.checkedAt ?? null,
    lastChangedAt: previous.lastChangedAt,
    intervalS: previous.intervalS ?? null,
    failures: previous.failures ?? 0,
  };
  const observation = previous === null ? 'changed' : observationOf({ status: 200, contentHash, previousHash: previous.contentHash, hasLocation: false });
  const plan = planRecrawl(state, observation, now, options, random);
  return {
    changed: observation === 'changed',
    changeFrequencyS: plan.changeIntervalS === null ? null : Math.round(plan.changeIntervalS),
    lastChangedAt: plan.state.lastChangedAt ?? now,
    nextCrawlAt: plan.nextCrawlAt,
  };
}
