import { describe, expect, it } from 'vitest';
import { PageCache } from './page-cache.js';

describe('PageCache', () => {
  it('draws a page once, then serves the kept bytes', () => {
    const cache = new PageCache(1000);
    let draws = 0;
    const draw = () => {
      draws += 1;
      return 'é'.repeat(10);
    };
    expect(cache.get('a', draw).toString()).toBe('é'.repeat(10));
    expect(cache.get('a', draw).toString()).toBe('é'.repeat(10));
    expect(draws).toBe(1);
    expect(cache.bytes).toBe(20);
    expect(cache.count).toBe(1);
  });

  it('drops the least recently served page past its bound, and never keeps one larger than the bound', () => {
    const cache = new PageCache(30);
    cache.get('a', () => 'a'.repeat(10));
    cache.get('b', () => 'b'.repeat(10));
    cache.get('c', () => 'c'.repeat(10));
    cache.get('a', () => 'x'); // served again: now the most recent
    cache.get('d', () => 'd'.repeat(10)); // 40 bytes: b goes
    expect(cache.bytes).toBe(30);
    expect(cache.get('a', () => 'redrawn').toString()).toBe('a'.repeat(10));
    expect(cache.get('b', () => 'B'.repeat(10)).toString()).toBe('B'.repeat(10));
    expect(cache.bytes).toBeLessThanOrEqual(30);
    const huge = cache.get('huge', () => 'h'.repeat(31));
    expect(huge.byteLength).toBe(31);
    expect(cache.count).toBe(3);
    expect(cache.bytes).toBeLessThanOrEqual(30);
  });
});
