import { describe, expect, it } from 'vitest';
import { ssrfCheckFrom } from './ssrf.js';

// Stands in for @trawl/fetch's blockedReason: loopback refused except 127.1.0.0/16.
const rule = (address: string): string | null => (address.startsWith('127.1.') ? null : address.startsWith('127.') || address === '::1' ? 'loopback' : address.startsWith('10.') ? 'private' : null);
const names: Record<string, string[]> = { 'public.example': ['93.184.216.34'], 'mixed.example': ['10.0.0.5', '93.184.216.34'], 'inside.example': ['10.0.0.5'] };
const resolve = async (host: string): Promise<string[]> => {
  const found = names[host];
  if (found === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found;
};

describe('ssrfCheckFrom', () => {
  const check = ssrfCheckFrom(rule, resolve);
  it.each([
    ['http://127.0.0.1/', 'ssrf:loopback'],
    ['http://[::1]/', 'ssrf:loopback'],
    ['http://127.1.0.5:8080/', null],
    ['http://public.example/', null],
    ['http://mixed.example/', null], // the fetcher's guard connects only to the allowed address
    ['http://inside.example/', 'ssrf:private'],
    ['http://missing.example/', 'dns:ENOTFOUND'],
  ])('%s → %s', async (url, reason) => {
    expect(await check(new URL(url))).toBe(reason);
  });
});
