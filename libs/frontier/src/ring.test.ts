import { describe, expect, it } from 'vitest';
import { HashRing, murmur3 } from './ring.js';

describe('murmur3 (x86, 32-bit)', () => {
  // Reference vectors from the canonical implementation (SMHasher).
  it.each([
    ['', 0, 0],
    ['', 1, 0x514e28b7],
    ['', 0xffffffff, 0x81f16f39],
    ['a', 0x9747b28c, 0x7fa09ea6],
    ['abc', 0, 0xb3dd93fa],
    ['abcd', 0x9747b28c, 0xf0478627],
    ['Hello, world!', 0x9747b28c, 0x24884cba],
    ['The quick brown fox jumps over the lazy dog', 0x9747b28c, 0x2fa826cd],
  ])('murmur3(%j, %d)', (key, seed, expected) => {
    expect(murmur3(key, seed)).toBe(expected);
  });
});

describe('HashRing', () => {
  const hosts = Array.from({ length: 20_000 }, (_, i) => `host-${i}.example.org`);

  it('spreads hosts evenly over partitions', () => {
    const ring = new HashRing([0, 1, 2, 3, 4, 5, 6, 7]);
    const counts = new Array(8).fill(0) as number[];
    for (const h of hosts) counts[ring.owner(h)] = (counts[ring.owner(h)] as number) + 1;
    for (const c of counts) {
      expect(c).toBeGreaterThan((hosts.length / 8) * 0.8);
      expect(c).toBeLessThan((hosts.length / 8) * 1.2);
    }
  });

  it('moves only about 1/N of hosts when a member is added', () => {
    const before = new HashRing([0, 1, 2, 3, 4, 5, 6, 7]);
    const after = new HashRing([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    const moved = hosts.filter((h) => before.owner(h) !== after.owner(h));
    expect(moved.length / hosts.length).toBeLessThan(0.16); // ideal 1/9 ≈ 0.11
    for (const h of moved) expect(after.owner(h)).toBe(8); // only towards the new member
  });

  it('is deterministic', () => {
    expect(new HashRing([0, 1, 2]).owner('example.com')).toBe(new HashRing([0, 1, 2]).owner('example.com'));
  });
});
