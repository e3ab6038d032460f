import { ErrorCode } from '@trawl/core';
import { describe, expect, it } from 'vitest';
import { attemptsFor, DEFAULT_RETRY, type RetryDecision, retryDecision, type RetryPolicy, urlRetryDelayMs } from './retry.js';

const policy: RetryPolicy = { attempts: 4, timeoutAttempts: 2, baseMs: 5000, maxMs: 600_000 };
const now = 1_000_000;
const top = () => 0.999999; // jitter factor ≈ 1
const bottom = () => 0; // jitter factor ½

describe('attemptsFor', () => {
  it.each<[string, string, RetryPolicy, number]>([
    ['a timeout gets the timeout budget', ErrorCode.FetchTimeout, policy, 2],
    ['a 5xx gets the full budget', ErrorCode.HttpServerError, policy, 4],
    ['a network failure gets the full budget', ErrorCode.FetchNetwork, policy, 4],
    ['a 429 gets the full budget', ErrorCode.HttpThrottled, policy, 4],
    ['the timeout budget never exceeds the full one', ErrorCode.FetchTimeout, { ...policy, attempts: 1, timeoutAttempts: 3 }, 1],
    ['robots.txt unavailable gets the robots budget', ErrorCode.RobotsUnavailable, { ...policy, robotsAttempts: 2 }, 2],
    ['robots.txt unavailable without a robots budget gets the full one', ErrorCode.RobotsUnavailable, policy, 4],
    ['the robots budget never exceeds the full one', ErrorCode.RobotsUnavailable, { ...policy, attempts: 1, robotsAttempts: 3 }, 1],
  ])('%s', (_name, code, p, expected) => {
    expect(attemptsFor(code, p)).toBe(expected);
  });
});

describe('retryDecision', () => {
  it.each<[string, { code: string; attempt: number; retryAt?: number }, RetryDecision]>([
    ['a 500, first try: retry after the base delay', { code: ErrorCode.HttpServerError, attempt: 1 }, { kind: 'retry', delayMs: 5000 }],
    ['a 500, third try: 4 × base', { code: ErrorCode.HttpServerError, attempt: 3 }, { kind: 'retry', delayMs: 20_000 }],
    ['a 500, fourth try: give up', { code: ErrorCode.HttpServerError, attempt: 4 }, { kind: 'give-up', attempts: 4 }],
    ['a deadline timeout, first try: one retry', { code: ErrorCode.FetchTimeout, attempt: 1 }, { kind: 'retry', delayMs: 5000 }],
    ['a deadline timeout, second try: give up', { code: ErrorCode.FetchTimeout, attempt: 2 }, { kind: 'give-up', attempts: 2 }],
    ['a timeout after two 500s: out of timeout tries', { code: ErrorCode.FetchTimeout, attempt: 3 }, { kind: 'give-up', attempts: 3 }],
    ['robots.txt unavailable, second try: give up (defaults)', { code: ErrorCode.RobotsUnavailable, attempt: 2 }, { kind: 'give-up', attempts: 2 }],
    ['a Retry-After later than the back-off wins', { code: ErrorCode.HttpThrottled, attempt: 1, retryAt: now + 90_000 }, { kind: 'retry', delayMs: 90_000 }],
    ['a Retry-After sooner than the back-off does not shorten it', { code: ErrorCode.HttpThrottled, attempt: 2, retryAt: now + 1000 }, { kind: 'retry', delayMs: 10_000 }],
    ['a Retry-After in the past is no delay', { code: ErrorCode.HttpThrottled, attempt: 1, retryAt: now - 5000 }, { kind: 'retry', delayMs: 5000 }],
  ])('%s', (_name, failure, expected) => {
    expect(retryDecision(failure, { ...policy, robotsAttempts: DEFAULT_RETRY.robotsAttempts }, now, top)).toEqual(expected);
  });
});

describe('urlRetryDelayMs', () => {
  it('doubles per attempt, with jitter in [½·d, d]', () => {
    expect([1, 2, 3, 4].map((a) => urlRetryDelayMs(a, policy, now, undefined, top))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect([1, 2, 3, 4].map((a) => urlRetryDelayMs(a, policy, now, undefined, bottom))).toEqual([2500, 5000, 10_000, 20_000]);
  });

  it('is capped, Retry-After included', () => {
    expect(urlRetryDelayMs(30, policy, now, undefined, top)).toBe(600_000);
    expect(urlRetryDelayMs(1, policy, now, now + 7_200_000, top)).toBe(600_000);
  });
});
