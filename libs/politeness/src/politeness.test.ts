import { describe, expect, it } from 'vitest';
import { DEFAULT_POLITENESS, HEALTHY, hostDelayMs, nextDueAt, nextHealth, type PolitenessOptions, parseRetryAfter } from './index.js';

const options: PolitenessOptions = { ...DEFAULT_POLITENESS, minDelayMs: 1000, maxDelayMs: 60_000, adaptiveFactor: 5, backoffBaseMs: 5000, backoffMaxMs: 600_000 };
const noJitter = () => 0.5; // factor exactly 1

describe('hostDelayMs', () => {
  it.each([
    ['the configured minimum when nothing else applies', null, HEALTHY, null, 1000],
    ['a fast response keeps the minimum', null, HEALTHY, 50, 1000],
    ['5 × a slow response (Heritrix)', null, HEALTHY, 800, 4000],
    ['robots Crawl-delay above the minimum', 2500, HEALTHY, 50, 2500],
    ['Crawl-delay below the minimum does not lower it', 200, HEALTHY, 10, 1000],
    ['back-off dominates while a host fails', 2000, { streak: 3, backoffMs: 20_000 }, 100, 20_000],
    ['the largest term wins', 7000, { streak: 1, backoffMs: 5000 }, 1000, 7000],
    ['capped at the maximum', null, { streak: 9, backoffMs: 600_000 }, null, 60_000],
    ['a tarpit response (30 s) is capped too', null, HEALTHY, 30_000, 60_000],
    ['no response time (a failed connect): no adaptive term', null, HEALTHY, null, 1000],
  ])('%s', (_name, crawlDelayMs, health, lastResponseMs, expected) => {
    expect(hostDelayMs({ crawlDelayMs, health, lastResponseMs }, options)).toBe(expected);
  });

  it('has no adaptive term with factor 0', () => {
    expect(hostDelayMs({ crawlDelayMs: null, health: HEALTHY, lastResponseMs: 5000 }, { ...options, adaptiveFactor: 0 })).toBe(1000);
  });
});

describe('nextHealth', () => {
  it.each([
    ['healthy stays healthy on success', HEALTHY, 'success', HEALTHY],
    ['first failure: base back-off', HEALTHY, 'error', { streak: 1, backoffMs: 5000 }],
    ['second failure doubles', { streak: 1, backoffMs: 5000 }, 'throttled', { streak: 2, backoffMs: 10_000 }],
    ['fifth failure: 16 × base', { streak: 4, backoffMs: 40_000 }, 'error', { streak: 5, backoffMs: 80_000 }],
    ['capped at backoffMax', { streak: 20, backoffMs: 600_000 }, 'error', { streak: 21, backoffMs: 600_000 }],
    ['a success halves the back-off and resets the streak', { streak: 5, backoffMs: 80_000 }, 'success', { streak: 0, backoffMs: 40_000 }],
    ['back-off under the minimum delay is dropped', { streak: 0, backoffMs: 1500 }, 'success', HEALTHY],
  ] as const)('%s', (_name, previous, outcome, expected) => {
    expect(nextHealth(previous, outcome, options, noJitter)).toEqual(expected);
  });

  it('recovers gradually: successes after a bad spell step the back-off down', () => {
    let health = HEALTHY;
    for (let i = 0; i < 6; i += 1) health = nextHealth(health, 'error', options, noJitter);
    const steps: number[] = [];
    while (health.backoffMs > 0) {
      health = nextHealth(health, 'success', options, noJitter);
      steps.push(health.backoffMs);
    }
    expect(steps).toEqual([80_000, 40_000, 20_000, 10_000, 5000, 2500, 1250, 0]);
  });

  it('jitters within ±25 %', () => {
    expect(nextHealth(HEALTHY, 'error', options, () => 0).backoffMs).toBe(3750);
    expect(nextHealth(HEALTHY, 'error', options, () => 0.999999).backoffMs).toBe(6250);
  });

  it('never shortens a back-off on another failure, whatever the jitter', () => {
    expect(nextHealth({ streak: 1, backoffMs: 9000 }, 'error', options, () => 0).backoffMs).toBe(9000);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-30T12:00:00Z');
  it.each([
    ['delay-seconds', '120', now + 120_000],
    ['zero', '0', now],
    ['HTTP-date', 'Mon, 30 Nov 2026 12:00:30 GMT', now + 30_000],
    ['HTTP-date in the past: now', 'Mon, 30 Nov 2026 11:00:00 GMT', now],
    ['capped', '99999999', now + 3_600_000],
    ['absent', undefined, null],
    ['empty', '  ', null],
    ['garbage', 'soon', null],
    ['negative is garbage', '-5', null],
    ['first of several', ['5', '10'], now + 5000],
  ] as const)('%s', (_name, value, expected) => {
    expect(parseRetryAfter(value as string | string[] | undefined, now, 3_600_000)).toBe(expected);
  });
});

describe('nextDueAt', () => {
  it('is now + delay, or the Retry-After time when later', () => {
    expect(nextDueAt(1000, 500, null)).toBe(1500);
    expect(nextDueAt(1000, 500, 9000)).toBe(9000);
    expect(nextDueAt(1000, 500, 1200)).toBe(1500);
  });
});
