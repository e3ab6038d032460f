import { describe, expect, it } from 'vitest';
import { bearerToken, tokenId, TokenSet } from './tokens.js';

describe('TokenSet', () => {
  const set = new TokenSet(['first-token-0123456789', 'second-token-0123456789']);

  it('verifies a token and names it by id only', () => {
    expect(set.verify('second-token-0123456789')).toBe(tokenId('second-token-0123456789'));
    expect(set.verify('second-token-0123456789')).toMatch(/^tok:[0-9a-f]{8}$/);
    expect(set.size).toBe(2);
  });

  it.each([['second-token-012345678'], ['second-token-01234567890'], [''], [null], [undefined]])('refuses %j', (candidate) => {
    expect(set.verify(candidate)).toBeNull();
  });

  it('an empty set refuses everything, the empty string included', () => {
    expect(new TokenSet([]).verify('')).toBeNull();
    expect(new TokenSet(['']).size).toBe(0);
  });

  it('knows which ids are current', () => {
    expect(set.hasId(tokenId('first-token-0123456789'))).toBe(true);
    expect(set.hasId(tokenId('gone-token-0123456789'))).toBe(false);
  });
});

describe('bearerToken', () => {
  it.each([
    ['Bearer abc', 'abc'],
    ['bearer  abc ', 'abc'],
    ['Basic abc', null],
    ['Bearer', null],
    ['Bearer a b', null],
    [undefined, null],
  ])('%j → %j', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});
