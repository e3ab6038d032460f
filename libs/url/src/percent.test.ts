import { describe, expect, it } from 'vitest';
import { normalizePercent, PATH_RAW, QUERY_RAW } from './percent.js';

describe('normalizePercent', () => {
  it.each([
    { text: '', path: '', query: '' },
    { text: '/plain/path', path: '/plain/path', query: '/plain/path' },
    { text: '%7e%7E%41%7a%30%2d%2e%5f', path: '~~Az0-._', query: '~~Az0-._' },
    { text: '%2f%3a%3B%40%25', path: '%2F%3A%3B%40%25', query: '%2F%3A%3B%40%25' },
    { text: '%c3%a9', path: '%C3%A9', query: '%C3%A9' },
    { text: '%', path: '%', query: '%' },
    { text: '%g1%1', path: '%g1%1', query: '%g1%1' },
    { text: 'a|b^c[d]e{f}g`h\\i', path: 'a%7Cb%5Ec%5Bd%5De%7Bf%7Dg%60h%5Ci', query: 'a%7Cb%5Ec%5Bd%5De%7Bf%7Dg%60h%5Ci' },
    { text: ' "<>', path: '%20%22%3C%3E', query: '%20%22%3C%3E' },
    { text: "!$&'()*+,;=:@", path: "!$&'()*+,;=:@", query: '!$&%27()*+,;=:@' },
    { text: '?', path: '%3F', query: '?' },
    { text: '#', path: '%23', query: '%23' },
    { text: '\u0000\u001f\u007f', path: '%00%1F%7F', query: '%00%1F%7F' },
  ])('$text', ({ text, path, query }) => {
    expect(normalizePercent(text, PATH_RAW)).toBe(path);
    expect(normalizePercent(text, QUERY_RAW)).toBe(query);
  });

  it('returns the same string when nothing changes', () => {
    const text = '/already/normal?x';
    expect(normalizePercent(text, QUERY_RAW)).toBe(text);
  });
});
