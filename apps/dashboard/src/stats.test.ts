import { describe, expect, it } from 'vitest';
import { reasonCode } from './stats.js';

describe('reasonCode', () => {
  it.each([
    ['ERR_HTTP_5XX: HTTP 503 (after 4 attempts)', 'ERR_HTTP_5XX'],
    ['ERR_ROBOTS_UNAVAILABLE: robots.txt unavailable: HTTP 500', 'ERR_ROBOTS_UNAVAILABLE'],
    ['job stalled more than allowable limit', 'job stalled more than allowable limit'],
    ['', 'unknown'],
    [`x${'y'.repeat(100)}`, `x${'y'.repeat(59)}`],
  ])('%j → %j', (reason, code) => {
    expect(reasonCode(reason)).toBe(code);
  });
});
