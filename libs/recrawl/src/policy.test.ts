import { describe, expect, it } from 'vitest';
import { NO_STATS } from './estimator.js';
import { observationOf } from './observation.js';
import { DEFAULT_RECRAWL, isDue, type Observation, planRecrawl, recrawlOptions, type RecrawlState } from './policy.js';

/** xorshift32: a seeded generator, so every simulated history reproduces. */
function seeded(seed: number): () => number {
  let s = seed >>> 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4_294_967_296;
  };
}

const noJitter = () => 0.5;
const S = 1000;
const T0 = 1_700_000_000_000;

/** The options of the simulations: seconds-to-a-day scale. */
const SIM = recrawlOptions({ minIntervalS: 10, maxIntervalS: 86_400, initialIntervalS: 3_600, failureBaseS: 10, goneIntervalS: 86_400 });

/**
 * A page whose content changes as a Poisson process (or exactly every `meanS` seconds, at a
 * random phase), visited when the policy says. Returns the estimate after each visit.
 */
function simulate(meanS: number, process: 'poisson' | 'periodic', seed: number, visits: number): (number | null)[] {
  const random = seeded(seed);
  const gap = () => (process === 'poisson' ? -Math.log(1 - random()) * meanS * S : meanS * S);
  let nextChange = T0 + (process === 'poisson' ? gap() : random() * meanS * S);
  let now = T0;
  let state: RecrawlState | null = null;
  const estimates: (number | null)[] = [];
  for (let visit = 0; visit <= visits; visit++) {
    let changed = visit === 0;
    while (nextChange <= now) {
      changed = true;
      nextChange += gap();
    }
    const plan = planRecrawl(state, changed ? 'changed' : 'unchanged', now, SIM, random);
    estimates.push(plan.changeIntervalS);
    state = plan.state;
    now = plan.nextCrawlAt;
  }
  return estimates;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

describe('planRecrawl: the estimate converges', () => {
  const SEEDS = 40;
  const VISITS = 300;
  const FROM = 100;

  // Measured (40 seeds each, visits 100–300, first guess 1 h, decay 0.95, revisit at ½ the
  // estimate, min 10 s, max 1 day): the median estimate is within ±2 % of the true mean change
  // interval; 80 % of estimates lie within ×0.72–×1.40 of it (62–65 % within ±25 %); each seed's
  // average (geometric mean over its 200 visits) within ×0.75–×1.29. A window of ~20 visits holds
  // ~8 detected changes, and a count of 8 is uncertain by ~1/√8 ≈ 35 %: that spread is the price
  // of forgetting old behaviour within ~20 visits (decay 0.95).
  it.each([30, 300, 3_600])('for a page changing as a Poisson process every %i s on average', (meanS) => {
    const ratios: number[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const estimates = simulate(meanS, 'poisson', seed * 7_919 + meanS, VISITS).slice(FROM);
      const mine = estimates.map((e) => Math.log((e ?? Infinity) / meanS));
      ratios.push(...mine);
      const geometricMean = Math.exp(mine.reduce((a, b) => a + b, 0) / mine.length);
      expect(geometricMean, `seed ${seed}`).toBeGreaterThan(0.7);
      expect(geometricMean, `seed ${seed}`).toBeLessThan(1.33);
    }
    ratios.sort((a, b) => a - b);
    expect(Math.exp(quantile(ratios, 0.5))).toBeGreaterThan(0.97);
    expect(Math.exp(quantile(ratios, 0.5))).toBeLessThan(1.03);
    expect(Math.exp(quantile(ratios, 0.1))).toBeGreaterThan(0.7);
    expect(Math.exp(quantile(ratios, 0.9))).toBeLessThan(1.45);
  });

  // A page changing like clockwork breaks the Poisson assumption in the safe direction: a
  // visit half a period after the last one sees a change half the time where a Poisson page
  // would show one 39 % of the time, so the estimate settles at ~0.8 of the period (measured:
  // 80 % of estimates within 0.75–0.85) and the page is visited a little more often than needed.
  it('for a page changing every 5 minutes exactly, settles a little below the period', () => {
    const ratios: number[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) ratios.push(...simulate(300, 'periodic', seed, VISITS).slice(FROM).map((e) => (e ?? Infinity) / 300));
    ratios.sort((a, b) => a - b);
    expect(quantile(ratios, 0.1)).toBeGreaterThan(0.7);
    expect(quantile(ratios, 0.5)).toBeGreaterThan(0.75);
    expect(quantile(ratios, 0.5)).toBeLessThan(0.85);
    expect(quantile(ratios, 0.9)).toBeLessThan(0.9);
  });

  it('moves towards the truth from a first guess far off, within the visits stated', () => {
    // From a first guess of 1 h, the median (over 40 seeds) distance to the truth falls to its
    // steady ~×1.2 within: 75 visits for a page changing every 30 s (×120 away: ×7.7 after 10
    // visits, ×2.4 after 30, ×1.24 after 75), 40 for every 5 min, 25 for every hour.
    for (const [meanS, within] of [[30, 75], [300, 40], [3_600, 25]] as const) {
      const at: number[] = [];
      for (let seed = 1; seed <= SEEDS; seed++) at.push(Math.abs(Math.log((simulate(meanS, 'poisson', seed, within)[within] ?? Infinity) / meanS)));
      at.sort((a, b) => a - b);
      expect(Math.exp(quantile(at, 0.5)), `mean ${meanS} s after ${within} visits`).toBeLessThan(1.3);
    }
  });
});

/** A random stored state with statistics, an interval and a last check. */
function randomState(random: () => number, now: number): RecrawlState {
  const visits = random() * 30;
  const changes = visits * random();
  return {
    visits,
    changes,
    changedS: changes * (1 + random() * 100_000),
    unchangedS: (visits - changes) * (1 + random() * 100_000),
    checkedAt: random() < 0.1 ? null : now - Math.round(random() * 5_000_000 * S),
    lastChangedAt: null,
    intervalS: random() < 0.1 ? null : 1 + random() * 5_000_000,
    failures: Math.floor(random() * 5),
  };
}

const OBSERVATIONS: Observation[] = ['changed', 'unchanged', 'failed', 'gone', 'moved', 'redirected', 'refused'];

describe('planRecrawl: guarantees', () => {
  it('an unchanged visit never shortens the interval (and a changed one never lengthens it)', () => {
    const random = seeded(42);
    for (let i = 0; i < 5_000; i++) {
      const now = T0 + Math.round(random() * 1e12);
      const previous = randomState(random, now);
      const before = Math.min(DEFAULT_RECRAWL.maxIntervalS, Math.max(DEFAULT_RECRAWL.minIntervalS, previous.intervalS ?? DEFAULT_RECRAWL.initialIntervalS));
      const unchanged = planRecrawl(previous, 'unchanged', now, DEFAULT_RECRAWL, noJitter);
      expect(unchanged.state.intervalS).toBeGreaterThanOrEqual(before);
      expect(unchanged.nextCrawlAt - now).toBeGreaterThanOrEqual(Math.round(before * S));
      expect(planRecrawl(previous, 'changed', now, DEFAULT_RECRAWL, noJitter).state.intervalS).toBeLessThanOrEqual(before);
    }
  });

  it('a static page drifts to the maximum, never jumping more than ×maxGrowth a visit', () => {
    for (const options of [DEFAULT_RECRAWL, SIM]) {
      let now = T0;
      let state = planRecrawl(null, 'changed', now, options, noJitter).state;
      const intervals = [state.intervalS!];
      for (let visit = 0; visit < 12; visit++) {
        now += state.intervalS! * S;
        state = planRecrawl(state, 'unchanged', now, options, noJitter).state;
        intervals.push(state.intervalS!);
      }
      for (let i = 1; i < intervals.length; i++) {
        expect(intervals[i]).toBeGreaterThanOrEqual(intervals[i - 1]!);
        expect(intervals[i]).toBeLessThanOrEqual(intervals[i - 1]! * options.maxGrowth);
      }
      // 1 day → 30 days, 1 h → 1 day: five doublings.
      expect(intervals[5]).toBe(options.maxIntervalS);
      expect(intervals.at(-1)).toBe(options.maxIntervalS);
    }
  });

  it('every due time lies within [min, max] of the visit, jitter included, whatever happens', () => {
    const random = seeded(7);
    for (const options of [DEFAULT_RECRAWL, SIM, recrawlOptions({ goneIntervalS: 1e9, failureMaxS: 1e9, failureBaseS: 1, jitter: 0.5 })]) {
      let state: RecrawlState | null = null;
      let now = T0;
      for (let i = 0; i < 3_000; i++) {
        const observation = OBSERVATIONS[Math.floor(random() * OBSERVATIONS.length)]!;
        const plan = planRecrawl(state, observation, now, options, random);
        const delayS = (plan.nextCrawlAt - now) / S;
        expect(delayS).toBeGreaterThanOrEqual(options.minIntervalS - 0.001);
        expect(delayS).toBeLessThanOrEqual(options.maxIntervalS + 0.001);
        if (plan.state.intervalS !== null) {
          expect(plan.state.intervalS).toBeGreaterThanOrEqual(options.minIntervalS);
          expect(plan.state.intervalS).toBeLessThanOrEqual(options.maxIntervalS);
        }
        state = random() < 0.02 ? randomState(random, now) : plan.state;
        now = random() < 0.7 ? plan.nextCrawlAt : now + Math.round(random() * 2 * options.maxIntervalS * S);
      }
    }
  });

  it('jitters within ±jitter, clamped to [min, max]', () => {
    const first = (u: number) => (planRecrawl(null, 'changed', T0, DEFAULT_RECRAWL, () => u).nextCrawlAt - T0) / S;
    expect(first(0)).toBe(0.9 * 86_400);
    expect(first(0.5)).toBe(86_400);
    expect(first(0.999_999)).toBeCloseTo(1.1 * 86_400, 0);
    const atMax: RecrawlState = { ...NO_STATS, checkedAt: T0 - 1, lastChangedAt: null, intervalS: DEFAULT_RECRAWL.maxIntervalS, failures: 0 };
    expect(planRecrawl(atMax, 'unchanged', T0, DEFAULT_RECRAWL, () => 0.999).nextCrawlAt - T0).toBe(DEFAULT_RECRAWL.maxIntervalS * S);
  });

  it('anything unvisited for longer than the maximum interval is due, whatever its due time says', () => {
    const maxMs = DEFAULT_RECRAWL.maxIntervalS * S;
    expect(isDue(T0 + 365 * 86_400 * S, T0 - maxMs, T0)).toBe(true);
    expect(isDue(T0 + 1, T0 - maxMs + 1, T0)).toBe(false);
    expect(isDue(T0, T0 - 1, T0)).toBe(true);
    expect(isDue(null, T0 - 1, T0)).toBe(false);
    expect(isDue(null, T0 - maxMs, T0)).toBe(true);
    expect(isDue(null, null, T0)).toBe(true);
    expect(isDue(T0 + 10 * S, T0 - 86_400 * S - 1, T0, SIM)).toBe(true);
    // And the policy never schedules past it.
    const random = seeded(3);
    for (let i = 0; i < 1_000; i++) {
      const plan = planRecrawl(randomState(random, T0), OBSERVATIONS[i % OBSERVATIONS.length]!, T0, DEFAULT_RECRAWL, random);
      expect(isDue(plan.nextCrawlAt, T0, T0 + maxMs)).toBe(true);
    }
  });

  it('failures back off, doubling per consecutive failure up to the bound; a success resets them', () => {
    let state = planRecrawl(null, 'changed', T0, DEFAULT_RECRAWL, noJitter).state;
    const delays: number[] = [];
    let now = T0 + 86_400 * S;
    for (let i = 0; i < 12; i++) {
      const plan = planRecrawl(state, 'failed', now, DEFAULT_RECRAWL, noJitter);
      delays.push((plan.nextCrawlAt - now) / S);
      expect(plan.state.failures).toBe(i + 1);
      // A failed visit saw nothing: the statistics and the last check stay as they were.
      expect(plan.state.checkedAt).toBe(T0);
      expect(plan.state.visits).toBe(0);
      state = plan.state;
      now = plan.nextCrawlAt;
    }
    expect(delays.slice(0, 8)).toEqual([3_600, 7_200, 14_400, 28_800, 57_600, 115_200, 230_400, 460_800]);
    expect(delays.slice(8)).toEqual([604_800, 604_800, 604_800, 604_800]);
    const recovered = planRecrawl(state, 'unchanged', now, DEFAULT_RECRAWL, noJitter);
    expect(recovered.state.failures).toBe(0);
    expect(recovered.state.visits).toBe(1);
    expect(recovered.state.unchangedS).toBe((now - T0) / S);
  });

  it.each([
    ['gone', 2_592_000],
    ['moved', 2_592_000],
    ['refused', 2_592_000],
    ['redirected', 7_200],
  ] as const)('%s: revisited after %i s, statistics kept', (observation, delayS) => {
    const previous: RecrawlState = { visits: 5, changes: 2, changedS: 7_200, unchangedS: 21_600, checkedAt: T0 - 3_600 * S, lastChangedAt: T0 - 7_200 * S, intervalS: 7_200, failures: 2 };
    const plan = planRecrawl(previous, observation, T0, DEFAULT_RECRAWL, noJitter);
    expect(plan.nextCrawlAt - T0).toBe(delayS * S);
    expect(plan.state).toEqual({ ...previous, failures: 0 });
  });

  it('a separate, shorter schedule for gone pages', () => {
    const options = recrawlOptions({ goneIntervalS: 7 * 86_400 });
    expect(planRecrawl(null, 'gone', T0, options, noJitter).nextCrawlAt - T0).toBe(7 * 86_400 * S);
  });

  it('a 304 is an unchanged visit', () => {
    const previous: RecrawlState = { visits: 3, changes: 1, changedS: 3_600, unchangedS: 7_200, checkedAt: T0 - 3_600 * S, lastChangedAt: T0 - 10_800 * S, intervalS: 3_600, failures: 0 };
    const notModified = observationOf({ status: 304, contentHash: null, previousHash: 'h1', hasLocation: false });
    const sameHash = observationOf({ status: 200, contentHash: 'h1', previousHash: 'h1', hasLocation: false });
    expect(notModified).toBe('unchanged');
    expect(planRecrawl(previous, notModified, T0, DEFAULT_RECRAWL, noJitter)).toEqual(planRecrawl(previous, sameHash, T0, DEFAULT_RECRAWL, noJitter));
    expect(planRecrawl(previous, notModified, T0, DEFAULT_RECRAWL, noJitter).state).toMatchObject({ visits: 3 * 0.95 + 1, changes: 0.95, lastChangedAt: T0 - 10_800 * S, checkedAt: T0 });
  });

  it('the first visit starts the clock: no statistics yet, the initial interval, the content counts as changed', () => {
    const plan = planRecrawl(null, 'changed', T0, DEFAULT_RECRAWL, noJitter);
    expect(plan).toEqual({
      state: { ...NO_STATS, checkedAt: T0, lastChangedAt: T0, intervalS: 86_400, failures: 0 },
      changeIntervalS: null,
      nextCrawlAt: T0 + 86_400 * S,
    });
  });

  it('a page that changed at each visit is revisited sooner, one that did not later', () => {
    const after = (observations: Observation[]) => {
      let state = planRecrawl(null, 'changed', T0, DEFAULT_RECRAWL, noJitter).state;
      let now = T0;
      for (const observation of observations) {
        now += state.intervalS! * S;
        state = planRecrawl(state, observation, now, DEFAULT_RECRAWL, noJitter).state;
      }
      return state.intervalS!;
    };
    expect(after(['changed', 'changed', 'changed'])).toBeLessThan(86_400 / 4);
    expect(after(['unchanged', 'unchanged', 'unchanged'])).toBe(8 * 86_400);
  });

  it('rejects bad options, naming the field', () => {
    expect(() => recrawlOptions({ minIntervalS: 0 })).toThrow(/minIntervalS/);
    expect(() => recrawlOptions({ maxIntervalS: 10 })).toThrow(/maxIntervalS/);
    expect(() => recrawlOptions({ decay: 1.5 })).toThrow(/decay/);
    expect(() => recrawlOptions({ revisitFraction: Number.NaN })).toThrow(/revisitFraction/);
    expect(() => recrawlOptions({ jitter: 1 })).toThrow(/jitter/);
    expect(recrawlOptions()).toEqual(DEFAULT_RECRAWL);
  });
});
