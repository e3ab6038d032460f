import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which addresses the crawler may connect to. Everything that is not globally routable unicast
 * is refused (a page, a redirect or a DNS answer must never point the crawler at the cloud
 * metadata service, the Redis next door or a printer on the LAN), except inside `allowNetworks`.
 */
export interface AddressPolicy {
  /**
   * CIDRs (`'127.1.0.0/16'`, `'fd12::/64'`) or single addresses that are allowed anyway, each on
   * every port or, with a port suffix, on those ports only (`'10.0.0.5:8080'`,
   * `'10.1.0.0/16:8000-8099'`, `'[fd12::/64]:443'`).
   */
  allowNetworks: readonly string[];
}

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

/**
 * Instance-metadata endpoints. Most sit in ranges refused anyway (link-local, CGNAT); they get
 * their own reason because an attempt to reach one is worth a louder log line. 168.63.129.16 is
 * Azure's wire server: a public address that only answers from inside Azure, refused outright.
 */
const CLOUD_METADATA = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean, …
  '169.254.170.2', // AWS ECS task metadata
  '100.100.100.200', // Alibaba Cloud
  '168.63.129.16', // Azure wire server
  'fd00:ec2:0:0:0:0:0:254', // AWS IMDS over IPv6 (fd00:ec2::254)
]);

/** IPv4 ranges refused, most specific first (RFC 6890 and the IANA special-purpose registry). */
const IPV4_RULES: ReadonlyArray<readonly [string, string]> = [
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/8', 'unspecified'], // "this network" (RFC 791); 0.0.0.0 itself reaches localhost
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade-nat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments
  ['192.0.2.0/24', 'documentation'], // TEST-NET-1
  ['192.88.99.0/24', 'reserved'], // deprecated 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'], // TEST-NET-2
  ['203.0.113.0/24', 'documentation'], // TEST-NET-3
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
];

/** IPv6 ranges refused before ipaddr.js's classification, where we want a more precise reason. */
const IPV6_RULES: ReadonlyArray<readonly [string, string]> = [
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'], // RFC 9637
  ['100::/64', 'discard'], // RFC 6666
  ['fec0::/10', 'site-local'], // deprecated by RFC 3879, still routed by some stacks
  ['64:ff9b:1::/48', 'reserved'], // local-use NAT64 (RFC 8215): never global
];

const parsedV4Rules = IPV4_RULES.map(([cidr, reason]) => [ipaddr.IPv4.parseCIDR(cidr), reason] as const);
const parsedV6Rules = IPV6_RULES.map(([cidr, reason]) => [ipaddr.IPv6.parseCIDR(cidr), reason] as const);
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96'); // RFC 6052
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3'); // RFC 4291 §2.4: everything else is unassigned or special

/** ipaddr.js range names → our reasons, for the ranges not covered by the rules above. */
const IPV6_RANGE_REASON: Record<string, string> = {
  unspecified: 'unspecified',
  loopback: 'loopback',
  linkLocal: 'link-local',
  multicast: 'multicast',
  uniqueLocal: 'unique-local',
  teredo: 'teredo', // tunnelled, not reachable without a Teredo interface; refused
  benchmarking: 'benchmarking',
  orchid2: 'reserved',
  deprecatedOrchid: 'reserved',
  segmentRouting: 'reserved',
  reserved: 'reserved',
};

/**
 * `null` if the crawler may connect to `address`, else why not: 'loopback', 'private',
 * 'link-local', 'carrier-grade-nat', 'multicast', 'reserved', 'unspecified', 'unique-local',
 * 'cloud-metadata', 'broadcast', 'documentation', 'benchmarking', 'discard', 'site-local',
 * 'teredo', or 'invalid' (not a canonical IPv4 / IPv6 literal: refuse what we cannot judge).
 * IPv6 forms that carry an IPv4 address (mapped, compatible, translated, NAT64, 6to4) are
 * judged by that address. An address inside one of `policy.allowNetworks` is allowed: on any
 * port for an entry without ports; for one with ports, on those ports when `port` is given (the
 * connect-time check) and at all when it is not (a lookup, which knows no port: the socket's
 * check decides).
 */
export function blockedReason(address: string, policy: AddressPolicy, port?: number): string | null {
  // Only the canonical forms a socket or a resolver produces; ipaddr.js alone would also take
  // inet_aton's shorthands ('127.1', '0x7f.1'), which must not reach this point as literals.
  if (isIP(address) === 0) return 'invalid';
  let parsed: IPv4 | IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'invalid';
  }
  if (isAllowed(parsed, compile(policy), port)) return null;
  return parsed.kind() === 'ipv4' ? ipv4Reason(parsed as IPv4) : ipv6Reason(parsed as IPv6);
}

/** Problems with a policy's CIDRs, for the Fetcher's option validation. */
export function addressPolicyProblems(policy: AddressPolicy): string[] {
  if (!Array.isArray(policy.allowNetworks)) return ['ssrf.allowNetworks must be an array of CIDRs'];
  return policy.allowNetworks
    .filter((network) => parseNetwork(network) === null)
    .map((network) => `ssrf.allowNetworks: not a CIDR or address: ${JSON.stringify(network)}`);
}

function ipv4Reason(address: IPv4): string | null {
  const text = address.toString();
  if (CLOUD_METADATA.has(text)) return 'cloud-metadata';
  for (const [range, reason] of parsedV4Rules) if (address.match(range)) return reason;
  // Anything ipaddr.js knows as special and we did not list (AS112, AMT) is still reachable
  // unicast; everything else above is refused.
  return null;
}

function ipv6Reason(address: IPv6): string | null {
  if (CLOUD_METADATA.has(address.toNormalizedString())) return 'cloud-metadata';
  const embedded = embeddedIPv4(address);
  if (embedded !== null) return ipv4Reason(embedded);
  for (const [range, reason] of parsedV6Rules) if (address.match(range)) return reason;
  const reason = IPV6_RANGE_REASON[address.range()];
  if (reason !== undefined) return reason;
  return address.match(GLOBAL_UNICAST) ? null : 'reserved';
}

/**
 * The IPv4 address an IPv6 address stands for, when the packets (or a translator) really go
 * to it: IPv4-mapped ::ffff:a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d (RFC 6145),
 * IPv4-compatible ::a.b.c.d (deprecated, RFC 4291 §2.5.5.1), NAT64 64:ff9b::a.b.c.d (RFC
 * 6052) and 6to4 2002:aabb:ccdd::/48 (RFC 3056). `::` and `::1` are themselves, not IPv4.
 */
function embeddedIPv4(address: IPv6): IPv4 | null {
  const p = address.parts;
  const [p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0] = p;
  const low32 = (): IPv4 => new ipaddr.IPv4([p6 >> 8, p6 & 0xff, p7 >> 8, p7 & 0xff]);
  const upperZero = p0 === 0 && p1 === 0 && p2 === 0 && p3 === 0;
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  if (upperZero && p4 === 0xffff && p5 === 0) return low32(); // ::ffff:0:a.b.c.d
  if (upperZero && p4 === 0 && p5 === 0 && (p6 !== 0 || p7 > 1)) return low32(); // ::a.b.c.d
  if (address.match(NAT64_WELL_KNOWN)) return low32();
  if (p0 === 0x2002) return new ipaddr.IPv4([p1 >> 8, p1 & 0xff, p2 >> 8, p2 & 0xff]);
  return null;
}

interface CompiledPolicy {
  /** Entries without ports. */
  list: BlockList;
  /** Entries with ports: each its own subnet and port range. */
  ported: { list: BlockList; from: number; to: number }[];
  empty: boolean;
}

const compiled = new WeakMap<AddressPolicy, CompiledPolicy>();

/** The allow list as a node BlockList, built once per policy object. */
function compile(policy: AddressPolicy): CompiledPolicy {
  const known = compiled.get(policy);
  if (known !== undefined) return known;
  const list = new BlockList();
  const ported: CompiledPolicy['ported'] = [];
  let count = 0;
  for (const network of policy.allowNetworks) {
    const parsed = parseNetwork(network);
    if (parsed === null) continue; // the Fetcher validates; a bad entry here allows nothing
    const [base, prefix, ports] = parsed;
    if (ports === null) list.addSubnet(base.toString(), prefix, base.kind());
    else {
      const one = new BlockList();
      one.addSubnet(base.toString(), prefix, base.kind());
      ported.push({ list: one, from: ports[0], to: ports[1] });
    }
    count++;
  }
  const result = { list, ported, empty: count === 0 };
  compiled.set(policy, result);
  return result;
}

/** `127.0.0.1`, `10.0.0.0/8`, `10.0.0.0/8:8080`, `10.0.0.5:8000-8099`, `[fd00::/8]:443`: the network and its ports (null: every port). */
function parseNetwork(entry: string): [IPv4 | IPv6, number, [number, number] | null] | null {
  if (typeof entry !== 'string') return null;
  const withPorts = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})(?:-(\d{1,5}))?$/.exec(entry);
  if (withPorts !== null) {
    const from = Number(withPorts[3]);
    const to = withPorts[4] === undefined ? from : Number(withPorts[4]);
    if (from < 1 || to > 65_535 || from > to) return null;
    const network = parseBareNetwork((withPorts[1] ?? withPorts[2]) as string);
    return network === null ? null : [...network, [from, to]];
  }
  const network = parseBareNetwork(entry);
  return network === null ? null : [...network, null];
}

function parseBareNetwork(network: string): [IPv4 | IPv6, number] | null {
  try {
    const slash = network.indexOf('/');
    if (slash !== -1) {
      // The base must be a canonical literal: ipaddr.js would also read '10.0/8' as 10.0.0.0/8.
      if (isIP(network.slice(0, slash)) === 0) return null;
      return ipaddr.parseCIDR(network);
    }
    if (isIP(network) === 0) return null;
    const address = ipaddr.parse(network);
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return null;
  }
}

function isAllowed(address: IPv4 | IPv6, policy: CompiledPolicy, port?: number): boolean {
  if (policy.empty) return false;
  if (inList(address, policy.list)) return true;
  return policy.ported.some((entry) => (port === undefined || (port >= entry.from && port <= entry.to)) && inList(address, entry.list));
}

function inList(address: IPv4 | IPv6, list: BlockList): boolean {
  // BlockList.check compares IPv4-mapped IPv6 against IPv4 rules itself; the explicit IPv4 check
  // keeps that true whatever node does, and strips an IPv6 zone id BlockList would reject.
  if (address.kind() === 'ipv6') {
    const v6 = address as IPv6;
    if (v6.isIPv4MappedAddress() && list.check(v6.toIPv4Address().toString(), 'ipv4')) return true;
    return list.check(new ipaddr.IPv6(v6.parts).toString(), 'ipv6');
  }
  return list.check(address.toString(), 'ipv4');
}
