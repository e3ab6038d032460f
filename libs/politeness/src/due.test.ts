import { describe, expect, it } from 'vitest';
import { nextDueAt, parseRetryAfter } from './due.js';

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
