import { describe, expect, it } from 'vitest';
import { hostAddresses } from './address.js';

describe('hostAddresses', () => {
  it('counts up from the base and skips x.y.z.0 and x.y.z.255', () => {
    const addresses = hostAddresses('127.1.0.253', 5);
    expect(addresses).toEqual(['127.1.0.253', '127.1.0.254', '127.1.1.1', '127.1.1.2', '127.1.1.3']);
    expect(hostAddresses('127.1.0.0', 1)).toEqual(['127.1.0.1']);
  });

  it('gives 300 distinct addresses', () => {
    const addresses = hostAddresses('127.3.0.1', 300);
    expect(new Set(addresses).size).toBe(300);
    expect(addresses.at(-1)).toBe('127.3.1.46');
  });

  it.each([
    ['10.0.0.1', 1],
    ['127.1.0', 1],
    ['127.1.0.999', 1],
    ['127.255.255.250', 10],
  ])('refuses %s × %d with ERR_TESTWEB_OPTIONS', (base, count) => {
    expect(() => hostAddresses(base, count)).toThrow(expect.objectContaining({ code: 'ERR_TESTWEB_OPTIONS' }));
  });
});
