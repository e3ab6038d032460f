import { describe, expect, it } from 'vitest';
import { observationOf } from './observation.js';

describe('observationOf', () => {
  it.each([
    [200, 'h2', 'h1', false, 'changed'],
    [200, 'h1', 'h1', false, 'unchanged'],
    [200, 'h1', null, false, 'changed'],
    [203, null, 'h1', false, 'unchanged'],
    [304, null, 'h1', false, 'unchanged'],
    [301, null, 'h1', true, 'moved'],
    [308, null, 'h1', true, 'moved'],
    [302, null, 'h1', true, 'redirected'],
    [303, null, 'h1', true, 'redirected'],
    [307, null, 'h1', true, 'redirected'],
    [302, null, 'h1', false, 'refused'],
    [404, null, 'h1', false, 'gone'],
    [410, null, 'h1', false, 'gone'],
    [403, null, 'h1', false, 'refused'],
    [401, null, 'h1', false, 'refused'],
    [451, null, 'h1', false, 'refused'],
    [501, null, 'h1', false, 'refused'],
    [505, null, 'h1', false, 'refused'],
    [408, null, 'h1', false, 'failed'],
    [425, null, 'h1', false, 'failed'],
    [429, null, 'h1', false, 'failed'],
    [500, null, 'h1', false, 'failed'],
    [503, null, 'h1', false, 'failed'],
    [null, null, 'h1', false, 'failed'],
  ] as const)('status %s, hash %s after %s (Location: %s) → %s', (status, contentHash, previousHash, hasLocation, expected) => {
    expect(observationOf({ status, contentHash, previousHash, hasLocation })).toBe(expected);
  });
});
