import { describe, expect, it } from 'vitest';
import { type AddressPolicy, addressPolicyProblems, blockedReason } from './ssrf.js';

const guardOn: AddressPolicy = { allowNetworks: [] };

describe('blockedReason without an allow list', () => {
  it.each([
    // IPv4: globally routable unicast passes
    ['8.8.8.8', null],
    ['1.1.1.1', null],
    ['93.184.216.34', null],
    ['9.255.255.255', null], // just below 10/8
    ['11.0.0.0', null], // just above 10/8
    ['100.63.255.255', null], // just below 100.64/10
    ['100.128.0.0', null], // just above 100.64/10
    ['172.15.255.255', null], // just below 172.16/12
    ['172.32.0.0', null], // just above 172.16/12
    ['192.167.255.255', null],
    ['192.169.0.0', null],
    ['198.17.255.255', null], // just below 198.18/15
    ['198.20.0.0', null], // just above 198.18/15
    ['223.255.255.255', null], // last unicast before multicast
    ['192.175.48.1', null], // AS112: anycast DNS, really global
    // IPv4: refused
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'carrier-grade-nat'],
    ['100.127.255.255', 'carrier-grade-nat'],
    ['100.100.100.200', 'cloud-metadata'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['127.1.0.5', 'loopback'],
    ['169.254.0.1', 'link-local'],
    ['169.254.169.254', 'cloud-metadata'],
    ['169.254.170.2', 'cloud-metadata'],
    ['168.63.129.16', 'cloud-metadata'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.1', 'reserved'],
    ['192.0.0.192', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['192.88.99.1', 'reserved'],
    ['192.168.0.1', 'private'],
    ['192.168.255.255', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['254.255.255.255', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    // IPv6: global unicast passes
    ['2606:4700:4700::1111', null],
    ['2001:4860:4860::8888', null],
    ['2a00:1450:4001:82b::200e', null],
    ['2001:500:88:200::10', null], // just past 2001::/23 (IETF assignments): a root server
    // IPv6: refused
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['fd00:ec2::254', 'cloud-metadata'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['2001:db8:ffff::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['100::1', 'discard'],
    ['2001::1', 'teredo'],
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'reserved'], // ORCHID (deprecated)
    ['2001:20::1', 'reserved'], // ORCHIDv2
    ['4000::1', 'reserved'], // outside 2000::/3: unassigned
    ['64:ff9b:1::1', 'reserved'], // local-use NAT64
    // IPv6 forms carrying an IPv4 address are judged by it
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'cloud-metadata'],
    ['::ffff:8.8.8.8', null],
    ['::ffff:0:127.0.0.1', 'loopback'], // IPv4-translated (RFC 6145)
    ['::127.0.0.1', 'loopback'], // IPv4-compatible (deprecated)
    ['::10.0.0.1', 'private'],
    ['::8.8.8.8', null],
    ['::2', 'unspecified'], // IPv4-compatible 0.0.0.2
    ['64:ff9b::127.0.0.1', 'loopback'], // NAT64
    ['64:ff9b::a9fe:a9fe', 'cloud-metadata'],
    ['64:ff9b::192.168.1.1', 'private'],
    ['64:ff9b::8.8.8.8', null],
    ['2002:7f00:1::', 'loopback'], // 6to4 of 127.0.0.1
    ['2002:c0a8:101::1', 'private'], // 6to4 of 192.168.1.1
    ['2002:808:808::1', null], // 6to4 of 8.8.8.8
    // Not canonical literals: refused, never guessed at
    ['127.1', 'invalid'],
    ['0x7f.0.0.1', 'invalid'],
    ['2130706433', 'invalid'],
    ['localhost', 'invalid'],
    ['', 'invalid'],
    ['[::1]', 'invalid'],
    ['1.2.3.256', 'invalid'],
  ])('%s → %s', (address, reason) => {
    expect(blockedReason(address, guardOn)).toBe(reason);
  });
});

describe('blockedReason with an allow list', () => {
  const policy: AddressPolicy = {
    allowNetworks: ['127.1.0.0/16', '10.20.0.0/16', 'fd00:1234::/32', '192.168.1.7', '::1'],
  };

  it.each([
    ['127.1.0.5', null],
    ['127.1.255.255', null],
    ['127.0.0.1', 'loopback'], // outside the /16
    ['127.2.0.1', 'loopback'],
    ['10.20.30.40', null],
    ['10.21.0.1', 'private'],
    ['192.168.1.7', null], // a bare address is a /32
    ['192.168.1.8', 'private'],
    ['fd00:1234:5678::1', null],
    ['fd00:1235::1', 'unique-local'],
    ['::1', null], // a bare IPv6 address is a /128
    ['::ffff:127.1.2.3', null], // IPv4-mapped is matched against the IPv4 allow list
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.20.0.1', null],
    ['8.8.8.8', null], // public stays allowed
    ['169.254.169.254', 'cloud-metadata'],
  ])('%s → %s', (address, reason) => {
    expect(blockedReason(address, policy)).toBe(reason);
  });

  it('an allow list can open anything, metadata included (the operator said so)', () => {
    expect(blockedReason('169.254.169.254', { allowNetworks: ['169.254.0.0/16'] })).toBeNull();
    expect(blockedReason('fe80::1%eth0', { allowNetworks: ['fe80::/10'] })).toBeNull();
    expect(blockedReason('0.0.0.0', { allowNetworks: ['0.0.0.0/0'] })).toBeNull();
  });

  it('reports malformed allow-list entries', () => {
    expect(addressPolicyProblems({ allowNetworks: ['127.0.0.0/8', '::1/128', '10.0.0.1'] })).toEqual([]);
    expect(addressPolicyProblems({ allowNetworks: ['127.0.0.0/33', 'example.com', '10.0/8', ''] })).toHaveLength(4);
  });

  it('a malformed entry allows nothing', () => {
    expect(blockedReason('127.0.0.1', { allowNetworks: ['127.0/8'] })).toBe('loopback');
  });
});
