import { describe, expect, it } from 'vitest';
import { mergeDirectives, parseXRobotsTag } from './robots-directives.js';

describe('parseXRobotsTag', () => {
  it.each([
    ['absent', undefined, { noindex: false, nofollow: false }],
    ['noindex', 'noindex', { noindex: true, nofollow: false }],
    ['several, any case', 'NoIndex, NOFOLLOW', { noindex: true, nofollow: true }],
    ['none', 'none', { noindex: true, nofollow: true }],
    ['scoped to another agent', 'googlebot: nofollow', { noindex: false, nofollow: false }],
    ['scoped to us', 'trawl: nofollow', { noindex: false, nofollow: true }],
    ['scope carries to later directives', 'trawl: noindex, nofollow', { noindex: true, nofollow: true }],
    ['several headers', ['otherbot: none', 'noindex'], { noindex: true, nofollow: false }],
    ['unavailable_after is not a scope', 'unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow', { noindex: false, nofollow: true }],
    ['unknown directives ignored', 'noarchive, nosnippet', { noindex: false, nofollow: false }],
  ] as const)('%s', (_name, value, expected) => {
    expect(parseXRobotsTag(value as string | string[] | undefined, 'trawl')).toEqual(expected);
  });

  it('merges page and header directives', () => {
    expect(mergeDirectives({ noindex: true, nofollow: false }, { noindex: false, nofollow: true })).toEqual({ noindex: true, nofollow: true });
  });
});
