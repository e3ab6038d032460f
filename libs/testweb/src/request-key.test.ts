import { describe, expect, it } from 'vitest';
import { removeDotSegments, requestKey } from './request-key.js';

describe('requestKey', () => {
  it.each([
    ['/', '/'],
    ['/p/3', '/p/3'],
    ['/p/%33', '/p/3'],
    ['/%70/3', '/p/3'],
    ['/p/./3', '/p/3'],
    ['/x/../p/3', '/p/3'],
    ['/b/c/../../p/3', '/p/3'],
    ['/../p/3', '/p/3'],
    ['/p/%2E/3', '/p/3'],
    ['/./', '/'],
    ['/x/../', '/'],
    ['/p/3#top', '/p/3'],
    ['/p/3?utm_source=x&utm_medium=y', '/p/3'],
    ['/p/3?fbclid=IwAR1', '/p/3'],
    ['/p/3?gclid=Cj0K1', '/p/3'],
    ['/p/3?', '/p/3'],
    ['/q?b=2&a=1', '/q?a=1&b=2'],
    ['/q?a=1&utm_campaign=z&b=2', '/q?a=1&b=2'],
    ['/q?b=2&&a=%31', '/q?a=1&b=2'],
    ['/%71?a=1&b=2', '/q?a=1&b=2'],
    ['/p/a%2fb', '/p/a%2Fb'],
    ['/p/3?x=1', '/p/3?x=1'],
    ['/p//3', '/p//3'],
    ['http://127.1.0.1:8080/p/3?utm_source=a', '/p/3'],
    ['HTTP://127.1.0.1:8080', '/'],
  ])('%s → %s', (target, key) => {
    expect(requestKey(target)).toBe(key);
  });

  it.each(['*', '', 'p/3', 'mailto:x@y'])('rejects the non-path target %j', (target) => {
    expect(requestKey(target)).toBeNull();
  });
});

describe('removeDotSegments (RFC 3986 §5.2.4 examples)', () => {
  it.each([
    ['/a/b/c/./../../g', '/a/g'],
    ['mid/content=5/../6', 'mid/6'],
    ['/a/b/c/..', '/a/b/'],
    ['/a/b/c/.', '/a/b/c/'],
    ['/..', '/'],
  ])('%s → %s', (path, expected) => {
    expect(removeDotSegments(path)).toBe(expected);
  });
});
