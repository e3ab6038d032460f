/**
 * Hosts map to frontier partitions on a consistent-hash ring (MurmurHash3 x86 32-bit, ~150
 * virtual nodes per partition), so changing the partition count moves only about 1/N of hosts.
 */
export function murmur3(key: string, seed = 0): number {
  const data = Buffer.from(key, 'utf8');
  const length = data.length;
  const blocks = length - (length % 4);
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  for (let i = 0; i < blocks; i += 4) {
    let k = data.readUInt32LE(i);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) >>> 0;
  }
  const tail = length & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= (data[blocks + 2] as number) << 16;
    if (tail >= 2) k ^= (data[blocks + 1] as number) << 8;
    k ^= data[blocks] as number;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class HashRing<M extends string | number = number> {
  private readonly points: Uint32Array;
  private readonly pointOwners: M[];

  constructor(members: readonly M[], virtualNodes = 150) {
    if (members.length === 0) throw new Error('a hash ring needs at least one member');
    const entries: { point: number; member: M }[] = [];
    for (const member of members) {
      for (let v = 0; v < virtualNodes; v += 1) entries.push({ point: murmur3(`${member}#${v}`), member });
    }
    entries.sort((a, b) => a.point - b.point);
    this.points = Uint32Array.from(entries, (e) => e.point);
    this.pointOwners = entries.map((e) => e.member);
  }

  private indexOf(hash: number): number {
    let lo = 0;
    let hi = this.points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.points[mid] as number) < hash) lo = mid + 1;
      else hi = mid;
    }
    return lo === this.points.length ? 0 : lo;
  }

  /** The member owning `key`: the first virtual node clockwise from the key's hash. */
  owner(key: string): M {
    return this.pointOwners[this.indexOf(murmur3(key))] as M;
  }
}
