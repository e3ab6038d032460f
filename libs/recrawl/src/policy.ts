import { addVisit, type ChangeStats, changeIntervalS, NO_STATS } from './estimator.js';

/**
 * When to fetch a page again. Pure: the caller reads the page's state, passes what this visit
 * observed, stores the returned state and due time.
 *
 * The revisit interval follows the estimated change interval (see ./estimator.ts), scaled by
 * `revisitFraction` so the stored copy is fresh most of the time, clamped to [min, max] and
 * jittered so pages crawled together do not come due together. Two ratchets keep it from
 * contradicting the evidence of the visit in hand: a visit that found no change never shortens
 * the interval, and one that found a change never lengthens it. Growth is also limited per
 * visit, so a page drifts to the maximum rather than jumping there after one quiet visit.
 */
export interface RecrawlOptions {
  /** Shortest revisit interval, seconds. */
  minIntervalS: number;
  /** Longest revisit interval, seconds: nothing goes unchecked for longer (see isDue). */
  maxIntervalS: number;
  /** Interval after the first successful fetch of a page, before anything is known. */
  initialIntervalS: number;
  /** Revisit at this fraction of the estimated mean change interval (0 < f ≤ 1). */
  revisitFraction: number;
  /** The interval grows at most this factor per visit (≥ 1). */
  maxGrowth: number;
  /** Weight kept by older visits per new visit (0 < d ≤ 1): a window of about 1 / (1 − d) visits. */
  decay: number;
  /** ±fraction of the interval added at random. */
  jitter: number;
  /** Revisit after the first failed visit; doubles per consecutive failure. */
  failureBaseS: number;
  /** Longest failure back-off (at most maxIntervalS). */
  failureMaxS: number;
  /** Revisit interval of a page that is gone, moved for good or refused (at most maxIntervalS). */
  goneIntervalS: number;
}

export const DEFAULT_RECRAWL: RecrawlOptions = {
  minIntervalS: 3_600,
  maxIntervalS: 2_592_000,
  initialIntervalS: 86_400,
  revisitFraction: 0.5,
  maxGrowth: 2,
  decay: 0.95,
  jitter: 0.1,
  failureBaseS: 3_600,
  failureMaxS: 604_800,
  goneIntervalS: 2_592_000,
};

/** Options with defaults filled in, checked; throws naming the first bad field. */
export function recrawlOptions(overrides: Partial<RecrawlOptions> = {}): RecrawlOptions {
  const options = { ...DEFAULT_RECRAWL, ...overrides };
  const check = (field: keyof RecrawlOptions, ok: boolean, rule: string) => {
    if (!ok) throw new Error(`invalid re-crawl option ${field}=${String(options[field])}: ${rule}`);
  };
  for (const field of Object.keys(DEFAULT_RECRAWL) as (keyof RecrawlOptions)[]) {
    check(field, Number.isFinite(options[field]), 'must be a finite number');
  }
  check('minIntervalS', options.minIntervalS > 0, 'must be > 0');
  check('maxIntervalS', options.maxIntervalS >= options.minIntervalS, 'must be ≥ minIntervalS');
  check('initialIntervalS', options.initialIntervalS > 0, 'must be > 0');
  check('revisitFraction', options.revisitFraction > 0 && options.revisitFraction <= 1, 'must be in (0, 1]');
  check('maxGrowth', options.maxGrowth >= 1, 'must be ≥ 1');
  check('decay', options.decay > 0 && options.decay <= 1, 'must be in (0, 1]');
  check('jitter', options.jitter >= 0 && options.jitter < 1, 'must be in [0, 1)');
  check('failureBaseS', options.failureBaseS > 0, 'must be > 0');
  check('failureMaxS', options.failureMaxS > 0, 'must be > 0');
  check('goneIntervalS', options.goneIntervalS > 0, 'must be > 0');
  return options;
}

/**
 * What one visit found, from the page's point of view:
 *   changed     content hash differs from the stored one (or the first copy of the page)
 *   unchanged   same content hash, or HTTP 304 Not Modified
 *   failed      transient: 5xx, 408/425/429, timeout, connection or DNS failure — retried with
 *               a back-off that grows per consecutive failure
 *   gone        404, 410 — revisited on the long `goneIntervalS` schedule
 *   moved       301, 308 — the content lives at the target (crawled as its own URL): as gone
 *   redirected  302, 303, 307 — temporary: revisited at the page's current interval
 *   refused     other permanent statuses (400, 401, 403, 451, 501, a 3xx without Location, …):
 *               nothing we can read; as gone
 * See `observationOf` for the mapping from an HTTP outcome.
 */
export type Observation = 'changed' | 'unchanged' | 'failed' | 'gone' | 'moved' | 'redirected' | 'refused';

/** What is stored per page between visits. */
export interface RecrawlState extends ChangeStats {
  /** Last visit that saw the content (2xx or 304), epoch ms; null before the first. */
  checkedAt: number | null;
  /** Last visit that found the content changed (the first copy counts), epoch ms. */
  lastChangedAt: number | null;
  /** The current revisit interval before jitter, seconds; null before the first check. */
  intervalS: number | null;
  /** Consecutive failed visits. */
  failures: number;
}

export interface RecrawlPlan {
  state: RecrawlState;
  /** The estimated mean time between changes, seconds; null while no change has been seen. */
  changeIntervalS: number | null;
  /** When the page is due again, epoch ms. */
  nextCrawlAt: number;
}

const clamp = (value: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, value));

/** The interval after a visit that saw the content, given the updated estimate. */
function contentInterval(previousS: number, changed: boolean, estimateS: number | null, options: RecrawlOptions): number {
  const targetS = estimateS === null ? Infinity : options.revisitFraction * estimateS;
  const intervalS = changed ? Math.min(previousS, targetS) : Math.max(previousS, Math.min(targetS, previousS * options.maxGrowth));
  return clamp(intervalS, options.minIntervalS, options.maxIntervalS);
}

/**
 * The page's new state and due time after a visit at `now` (epoch ms) that observed
 * `observation`. `previous` is null for a page never visited before.
 */
export function planRecrawl(
  previous: RecrawlState | null,
  observation: Observation,
  now: number,
  options: RecrawlOptions = DEFAULT_RECRAWL,
  random: () => number = Math.random,
): RecrawlPlan {
  const { minIntervalS, maxIntervalS } = options;
  const stats: ChangeStats = previous ?? NO_STATS;
  const previousIntervalS = clamp(previous?.intervalS ?? options.initialIntervalS, minIntervalS, maxIntervalS);
  let state: RecrawlState = {
    visits: stats.visits,
    changes: stats.changes,
    changedS: stats.changedS,
    unchangedS: stats.unchangedS,
    checkedAt: previous?.checkedAt ?? null,
    lastChangedAt: previous?.lastChangedAt ?? null,
    intervalS: previous?.intervalS == null ? null : previousIntervalS,
    failures: 0,
  };
  let delayS: number;

  switch (observation) {
    case 'changed':
    case 'unchanged': {
      const changed = observation === 'changed';
      const sinceCheckS = state.checkedAt === null ? 0 : (now - state.checkedAt) / 1000;
      // The first copy, or a clock that went backwards between workers: nothing to compare.
      const updated = sinceCheckS > 0 ? addVisit(stats, changed, sinceCheckS, options.decay) : stats;
      const intervalS = sinceCheckS > 0 ? contentInterval(previousIntervalS, changed, changeIntervalS(updated), options) : previousIntervalS;
      state = { ...state, ...updated, checkedAt: now, lastChangedAt: changed ? now : state.lastChangedAt, intervalS };
      delayS = intervalS;
      break;
    }
    case 'failed': {
      const failures = (previous?.failures ?? 0) + 1;
      state = { ...state, failures };
      delayS = Math.min(options.failureMaxS, options.failureBaseS * 2 ** Math.min(failures - 1, 52));
      break;
    }
    case 'gone':
    case 'moved':
    case 'refused':
      delayS = options.goneIntervalS;
      break;
    case 'redirected':
      delayS = previousIntervalS;
      break;
  }

  const jittered = clamp(delayS * (1 + options.jitter * (2 * random() - 1)), minIntervalS, maxIntervalS);
  return { state, changeIntervalS: changeIntervalS(state), nextCrawlAt: now + Math.round(jittered * 1000) };
}

/**
 * Whether a page is due at `now`: its due time has come, or it has not been visited for longer
 * than the maximum interval whatever its due time says (a row scheduled by an older policy, or
 * never scheduled). `lastVisitAt` is the last visit of any outcome, so a page that keeps
 * failing or is gone follows its own schedule.
 */
export function isDue(nextCrawlAt: number | null, lastVisitAt: number | null, now: number, options: Pick<RecrawlOptions, 'maxIntervalS'> = DEFAULT_RECRAWL): boolean {
  if (nextCrawlAt !== null && nextCrawlAt <= now) return true;
  return lastVisitAt === null || now - lastVisitAt >= options.maxIntervalS * 1000;
}
