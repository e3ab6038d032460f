/**
 * The probabilistic half of the seen-set. A Bloom filter answers "definitely new" or "maybe
 * seen"; it never forgets and never says "seen" of something it was not given, except with its
 * false-positive rate. Two backends implement it: RedisBloom's BF.* commands when the server has
 * the module, and a Lua bitmap filter otherwise. Both pass the same contract suite.
 */
export type BloomBackendName = 'redisbloom' | 'lua-bitmap';

export interface BloomInfo {
  backend: BloomBackendName;
  /** Items added (distinct as far as the filter can tell). */
  items: number;
  /** Memory the filter's keys use on the server. */
  bytes: number;
  /** Design capacity of the first layer × shards. */
  capacity: number;
  errorRate: number;
  /** Sub-filters (grows when the crawl outruns its capacity estimate). */
  layers: number;
}

export interface BloomFilter {
  readonly backend: BloomBackendName;
  /**
   * Adds every fingerprint and says which were definitely new (true) and which maybe seen
   * (false). A fingerprint repeated within one call is new at most once. One round trip per
   * shard.
   */
  addIfNew(fingerprints: readonly Buffer[]): Promise<boolean[]>;
  /** Tests without adding: true means maybe seen. */
  mightContain(fingerprints: readonly Buffer[]): Promise<boolean[]>;
  info(): Promise<BloomInfo>;
  /**
   * Creates the filter at its full first size if it does not exist yet, adding nothing; leaves an
   * existing one as it is. A Redis string of tens of MB (the default capacity) is allocated and
   * zeroed in one command, during which Redis serves nobody: called as a crawl's processes start,
   * that happens before the first fetch, not in the crawl's first discovery batch.
   */
  prepare(): Promise<void>;
  /** Removes the filter's keys. */
  clear(): Promise<void>;
}

export interface BloomOptions {
  /** Key namespace. */
  prefix: string;
  /** Expected distinct URLs (all shards together) before the filter adds a layer. */
  capacity: number;
  /** Target false-positive rate, e.g. 0.01. */
  errorRate: number;
  /** Independent filters, each in its own Redis Cluster slot; a fingerprint's first byte picks one. */
  shards: number;
}

/** Groups fingerprints by shard, keeping each one's position in the original list. */
export function byShard(fingerprints: readonly Buffer[], shards: number): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  fingerprints.forEach((fp, index) => {
    if (fp.length < 12) throw new Error(`fingerprints must be at least 12 bytes, got ${fp.length}`);
    const shard = shards === 1 ? 0 : (fp[8] as number) % shards;
    let list = groups.get(shard);
    if (!list) groups.set(shard, (list = []));
    list.push(index);
  });
  return groups;
}

export const bloomKeyBase = (prefix: string, shard: number): string => `${prefix}:{s${shard}}:seen:`;
