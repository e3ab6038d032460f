import { DEFAULT_RECRAWL, type RecrawlOptions } from './policy.js';

/** What the priority of a due page is computed from. */
export interface PriorityInput {
  /** Estimated mean time between changes, seconds; null while no change has been seen. */
  changeIntervalS: number | null;
  /** Last visit that saw the content, epoch ms; null when the crawler holds no copy. */
  checkedAt: number | null;
  /** Consecutive failed visits. */
  failures: number;
}

export interface PriorityOptions {
  /** Weight of the age term (time since the last check over the maximum interval), 0..1. */
  ageWeight: number;
}

export const DEFAULT_PRIORITY: PriorityOptions = { ageWeight: 0.25 };

/**
 * How urgently a due page should be fetched, 0..1 (1 first). Mostly the probability that the
 * stored copy is stale — under the Poisson model, 1 − e^(−Δ/μ) after Δ seconds without a check
 * for a page changing every μ seconds on average — so a fast-changing page long unchecked comes
 * first and a page never seen to change comes last. A share (`ageWeight`) goes to plain age, so
 * pages never seen to change still rise as they approach the maximum interval. A page the
 * crawler holds no copy of counts as stale. Each consecutive failure halves the result, so a
 * page that keeps failing yields to pages that answer.
 */
export function recrawlPriority(
  page: PriorityInput,
  now: number,
  options: Pick<RecrawlOptions, 'maxIntervalS'> = DEFAULT_RECRAWL,
  priority: PriorityOptions = DEFAULT_PRIORITY,
): number {
  let stale = 1;
  let age = 1;
  if (page.checkedAt !== null) {
    const sinceS = Math.max(0, (now - page.checkedAt) / 1000);
    stale = page.changeIntervalS === null ? 0 : 1 - Math.exp(-sinceS / Math.max(page.changeIntervalS, 1e-9));
    age = Math.min(1, sinceS / options.maxIntervalS);
  }
  const score = (1 - priority.ageWeight) * stale + priority.ageWeight * age;
  return Math.min(1, Math.max(0, score * 0.5 ** Math.max(0, page.failures)));
}
