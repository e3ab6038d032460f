/**
 * How often a page changes, estimated from what the crawler could see: at each visit, only
 * whether the content differs from the previous visit's — never how many times it changed in
 * between. Averaging the intervals between visits that saw a change (an EMA) is censored: a page
 * found changed at every visit may have changed ten times in between, so the average never
 * drops below the visit interval and the schedule never catches up.
 *
 * Cho & Garcia-Molina ("Estimating frequency of change", ACM TOIT 3(3), 2003) model changes as
 * a Poisson process of rate λ. With n visits at a regular interval I, X of which saw a change,
 * their bias-reduced estimator is
 *
 *     λ̂ = −ln((n − X + ½) / (n + ½)) / I
 *
 * which stays finite when every visit saw a change (X = n) and, unlike X / (n·I), does not
 * underestimate fast-changing pages.
 *
 * The crawler's visits are not regular: the interval adapts, is jittered, and a failure or a
 * sitemap hint moves a visit. For irregular intervals the maximum-likelihood equation is
 *
 *     Σ_changed tᵢ / (e^{λ tᵢ} − 1)  =  Σ_unchanged tⱼ
 *
 * It needs every changed interval, so we pool them at their mean t̄ = T_c / X, which solves it in
 * closed form: λ = ln(1 + T_c / T_u) / t̄. Adding Cho's ½-visit correction to the unchanged side
 * (half of the mean interval T / n) gives
 *
 *     λ̂ = (X / T_c) · ln(1 + T_c / (T_u + ½ · T / n)),     T = T_c + T_u
 *
 * which is exactly the estimator above when all intervals are equal (T_c = X·I, T_u = (n−X)·I),
 * and needs only four sums. Each sum is decayed by a factor per visit, so old behaviour fades
 * (with decay d a visit counts d^k after k more visits: a window of about 1/(1−d) visits).
 */

/** Decayed sums over a page's visits that could be compared with the visit before. */
export interface ChangeStats {
  /** n: visits compared with the previous copy. */
  visits: number;
  /** X: those that found the content changed. */
  changes: number;
  /** T_c: seconds between the previous check and each visit that found a change, summed. */
  changedS: number;
  /** T_u: the same for the visits that found none. */
  unchangedS: number;
}

export const NO_STATS: ChangeStats = { visits: 0, changes: 0, changedS: 0, unchangedS: 0 };

/**
 * Adds one compared visit: `intervalS` seconds after the previous check, the content had
 * (`changed`) or had not changed. Older visits are first multiplied by `decay` (0 < decay ≤ 1).
 */
export function addVisit(stats: ChangeStats, changed: boolean, intervalS: number, decay: number): ChangeStats {
  return {
    visits: stats.visits * decay + 1,
    changes: stats.changes * decay + (changed ? 1 : 0),
    changedS: stats.changedS * decay + (changed ? intervalS : 0),
    unchangedS: stats.unchangedS * decay + (changed ? 0 : intervalS),
  };
}

/**
 * The estimated change rate λ̂ (changes per second); 0 when no visit in the window saw a change
 * (or there is nothing to go on yet).
 */
export function changeRate(stats: ChangeStats): number {
  const { visits, changes, changedS, unchangedS } = stats;
  if (visits <= 0 || changes <= 0 || changedS <= 0) return 0;
  const meanIntervalS = (changedS + unchangedS) / visits;
  return (changes / changedS) * Math.log1p(changedS / (unchangedS + 0.5 * meanIntervalS));
}

/** The largest change interval reported (and stored in an integer column): about 68 years. */
export const MAX_CHANGE_INTERVAL_S = 2 ** 31 - 1;

/** The estimated mean time between changes, in seconds; null when no change has been seen. */
export function changeIntervalS(stats: ChangeStats): number | null {
  const rate = changeRate(stats);
  if (rate <= 0) return null;
  return Math.min(MAX_CHANGE_INTERVAL_S, 1 / rate);
}
