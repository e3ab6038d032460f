import type { RedisClient } from '@trawl/redis';
import { type BloomFilter, type BloomInfo, type BloomOptions, bloomKeyBase, byShard } from './bloom.js';

/** True when the server has the RedisBloom module (BF.* commands): Redis 8, redis-stack. */
export async function hasRedisBloom(redis: RedisClient): Promise<boolean> {
  try {
    const info = (await redis.call('COMMAND', 'INFO', 'BF.MADD')) as unknown[];
    return Array.isArray(info) && info[0] !== null && info[0] !== undefined;
  } catch {
    return false;
  }
}

/**
 * The seen-set on RedisBloom's scalable Bloom filter. Adds go through `BF.INSERT … CAPACITY …
 * ERROR … EXPANSION 2`, so a shard whose key is missing — never created, or gone with a Redis
 * wipe — is created with this filter's capacity and error rate, never RedisBloom's defaults
 * (which `BF.MADD` would use); lookups (`BF.MEXISTS`) on a missing key find nothing and create
 * nothing.
 */
export class RedisBloomFilter implements BloomFilter {
  readonly backend = 'redisbloom' as const;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: BloomOptions,
  ) {}

  private key(shard: number): string {
    return `${bloomKeyBase(this.options.prefix, shard)}bf`;
  }

  /** BF.INSERT's options: create a missing shard with this filter's parameters. */
  private createOptions(): (string | number)[] {
    return ['CAPACITY', this.shardCapacity(), 'ERROR', this.options.errorRate, 'EXPANSION', 2];
  }

  private shardCapacity(): number {
    return Math.max(1, Math.ceil(this.options.capacity / this.options.shards));
  }

  private async run(command: 'add' | 'exists', fingerprints: readonly Buffer[]): Promise<number[]> {
    const result = new Array<number>(fingerprints.length);
    await Promise.all(
      [...byShard(fingerprints, this.options.shards)].map(async ([shard, indexes]) => {
        const items = indexes.map((i) => fingerprints[i] as Buffer);
        const flags = (
          command === 'add'
            ? await this.redis.call('BF.INSERT', this.key(shard), ...this.createOptions(), 'ITEMS', ...items)
            : await this.redis.call('BF.MEXISTS', this.key(shard), ...items)
        ) as number[];
        flags.forEach((flag, j) => {
          result[indexes[j] as number] = Number(flag);
        });
      }),
    );
    return result;
  }

  async prepare(): Promise<void> {
    await Promise.all(
      Array.from({ length: this.options.shards }, async (_, shard) => {
        try {
          await this.redis.call('BF.RESERVE', this.key(shard), this.options.errorRate, this.shardCapacity(), 'EXPANSION', 2);
        } catch (error) {
          // Created already (by this crawl's first process, or its first add).
          if (!/exists/i.test((error as Error).message)) throw error;
        }
      }),
    );
  }

  async addIfNew(fingerprints: readonly Buffer[]): Promise<boolean[]> {
    return (await this.run('add', fingerprints)).map((flag) => flag === 1);
  }

  async mightContain(fingerprints: readonly Buffer[]): Promise<boolean[]> {
    return (await this.run('exists', fingerprints)).map((flag) => flag === 1);
  }

  async info(): Promise<BloomInfo> {
    let items = 0;
    let bytes = 0;
    let layers = 0;
    for (let shard = 0; shard < this.options.shards; shard += 1) {
      if ((await this.redis.exists(this.key(shard))) === 0) continue;
      const raw = (await this.redis.call('BF.INFO', this.key(shard))) as (string | number)[];
      const fields = new Map<string, number>();
      for (let i = 0; i + 1 < raw.length; i += 2) fields.set(String(raw[i]).toLowerCase(), Number(raw[i + 1]));
      items += fields.get('number of items inserted') ?? 0;
      bytes += fields.get('size') ?? 0;
      layers = Math.max(layers, fields.get('number of filters') ?? 0);
    }
    return { backend: this.backend, items, bytes, capacity: this.options.capacity, errorRate: this.options.errorRate, layers };
  }

  async clear(): Promise<void> {
    // One UNLINK per shard: each shard's key is in its own cluster slot.
    await Promise.all(Array.from({ length: this.options.shards }, (_, s) => this.redis.unlink(this.key(s))));
  }
}
