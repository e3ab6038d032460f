import { TestWebError, TestWebErrorCode } from './errors.js';

function parseIPv4(address: string): number {
  const parts = address.split('.');
  const octets = parts.map((part) => (/^(0|[1-9]\d{0,2})$/.test(part) ? Number(part) : Number.NaN));
  if (octets.length !== 4 || octets.some((o) => !(o >= 0 && o <= 255))) {
    throw new TestWebError(TestWebErrorCode.Options, `not an IPv4 address: ${JSON.stringify(address)}`);
  }
  return octets.reduce((acc, o) => acc * 256 + o, 0);
}

function formatIPv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/**
 * `count` loopback addresses starting at `base`, skipping x.y.z.0 and x.y.z.255 (network and
 * broadcast-looking addresses that some tools refuse). Linux routes all of 127.0.0.0/8 to lo, so
 * each host of the synthetic web gets its own address and the crawler sees distinct hosts.
 */
export function hostAddresses(base: string, count: number): string[] {
  let value = parseIPv4(base);
  if (value >>> 24 !== 127) {
    throw new TestWebError(TestWebErrorCode.Options, `baseAddress must be in 127.0.0.0/8 (loopback), got ${base}`);
  }
  const addresses: string[] = [];
  while (addresses.length < count) {
    const last = value & 255;
    if (last !== 0 && last !== 255) addresses.push(formatIPv4(value));
    value += 1;
    if (value >>> 24 !== 127) {
      throw new TestWebError(TestWebErrorCode.Options, `${count} hosts from ${base} run past 127.255.255.254`);
    }
  }
  return addresses;
}
