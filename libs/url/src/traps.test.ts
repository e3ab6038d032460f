import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAP_OPTIONS, isDateVariant, trapReason, variantKey } from './traps.js';

const now = Date.parse('2026-11-30T00:00:00Z');

describe('trapReason', () => {
  it.each([
    ['http://a.example/', null],
    ['http://a.example/blog/2026/11/30/post', null],
    ['http://a.example/archive/2007/01/', null],
    ['http://a.example/a/b/a/b/', null],
    ['http://a.example/a/b/a/b/a/b/', 'repeated-segments'],
    ['http://a.example/x/x/x', 'repeated-segments'],
    ['http://a.example/' + Array.from({ length: 41 }, (_, i) => `s${i}`).join('/'), 'deep-path'],
    ['http://a.example/calendar/2031/05/17', 'calendar'],
    ['http://a.example/calendar/2000/05/17', null],
    ['http://a.example/calendar/1980/05/17', 'calendar'],
    ['http://a.example/calendar/1899/12/31', 'calendar'],
    ['http://a.example/events/2028-02-01', 'calendar'],
    ['http://a.example/events/2027-02-01', null],
    ['http://a.example/calendar?date=2031-05-17', 'calendar'],
    ['http://a.example/calendar?date=20310517', 'calendar'],
    ['http://a.example/calendar?date=2026-12-01', null],
    ['http://a.example/cal?year=2199', 'calendar'],
    ['http://a.example/cal?page=2199', null],
    ['http://a.example/products/1600', null],
    ['http://a.example/products/1600/5', 'calendar'],
    ['http://a.example/item/20310517123', null],
    ['http://a.example/s?' + Array.from({ length: 31 }, (_, i) => `p${i}=1`).join('&'), 'query-explosion'],
    ['http://a.example/s?' + Array.from({ length: 30 }, (_, i) => `p${i}=1`).join('&'), null],
  ])('%s → %s', (url, expected) => {
    expect(trapReason(url, DEFAULT_TRAP_OPTIONS, now)).toBe(expected);
  });
});

describe('variantKey', () => {
  it.each([
    ['http://a.example/search?q=1', 'a.example/search?'],
    ['https://a.example:8443/s?x', 'a.example:8443/s?'],
    ['http://a.example/plain', null],
    ['http://a.example/item/12345', null],
    // A six-digit id is not a date: only dates with separators (or /YYYY/MM) are.
    ['http://a.example/item/201912', null],
    ['http://a.example/item?id=201912', 'a.example/item?'],
    ['http://a.example/calendar/2031/05/17', 'date a.example/calendar/*'],
    ['http://a.example/calendar/2031/5', 'date a.example/calendar/*'],
    ['http://a.example/calendar?date=2031-05-17', 'date a.example/calendar/*'],
    ['http://a.example/calendar/?date=2031-05-17&view=day', 'date a.example/calendar/*'],
    ['http://a.example/archive?year=2019', 'date a.example/archive/*'],
    ['http://a.example/events/2027-02-01', 'date a.example/events/*'],
    ['http://a.example/archive/2007/01/', 'date a.example/archive/*/'],
    ['http://a.example/blog/2026/11/30/a-post', 'date a.example/blog/*/a-post'],
    ['http://a.example/blog/2026/11/30/page/2', 'date a.example/blog/*/page/#'],
    ['http://a.example', null],
  ])('%s → %s', (url, expected) => {
    expect(variantKey(url)).toBe(expected);
  });

  it('gives a calendar one pattern in both its forms, and each dated post its own', () => {
    expect(variantKey('http://a.example/cal/2031/05/17')).toBe(variantKey('http://a.example/cal?d=2031-05-18'));
    expect(variantKey('http://a.example/blog/2026/11/30/one')).not.toBe(variantKey('http://a.example/blog/2026/11/29/two'));
    expect(isDateVariant(variantKey('http://a.example/cal/2031/05/17') as string)).toBe(true);
    expect(isDateVariant(variantKey('http://a.example/search?q=x') as string)).toBe(false);
  });
});
