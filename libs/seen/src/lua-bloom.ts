import { bindScripts, loadScripts, type RedisClient, type ScriptCaller } from '@trawl/redis';
import { type BloomFilter, type BloomInfo, type BloomOptions, bloomKeyBase, byShard } from './bloom.js';

const SCRIPTS = loadScripts(import.meta.url, '../lua', ['addIfNew-1']);
/** Items per script call: keeps each call short so Redis never stalls other clients for long. */
const CHUNK = 500;

/** Scalable Bloom filter in plain Redis bitmaps, driven by one Lua script. */
export class LuaBloomFilter implements BloomFilter {
  readonly backend = 'lua-bitmap' as const;
  private readonly scripts: Record<'addIfNew', ScriptCaller>;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: BloomOptions,
  ) {
    this.scripts = bindScripts(redis, SCRIPTS);
  }

  addIfNew(fingerprints: readonly Buffer[]): Promise<boolean[]> {
    return this.run(fingerprints, true);
  }

  async mightContain(fingerprints: readonly Buffer[]): Promise<boolean[]> {
    return (await this.run(fingerprints, false)).map((isNew) => !isNew);
  }

  async prepare(): Promise<void> {
    // An add of nothing: it creates each shard's first layer (bitmap included) when missing.
    await Promise.all(Array.from({ length: this.options.shards }, (_, shard) => this.scripts.addIfNew([`${bloomKeyBase(this.options.prefix, shard)}meta`], this.args(shard, true))));
  }

  private async run(fingerprints: readonly Buffer[], adding: boolean): Promise<boolean[]> {
    const result = new Array<boolean>(fingerprints.length);
    const calls: Promise<void>[] = [];
    for (const [shard, indexes] of byShard(fingerprints, this.options.shards)) {
      const base = bloomKeyBase(this.options.prefix, shard);
      for (let i = 0; i < indexes.length; i += CHUNK) {
        const chunk = indexes.slice(i, i + CHUNK);
        const args = this.args(shard, adding);
        for (const index of chunk) {
          const fp = fingerprints[index] as Buffer;
          // h2 is forced odd so it is never 0 and shares no factor 2 with the bitmap size.
          args.push(fp.readUInt32LE(0), (fp.readUInt32LE(4) | 1) >>> 0);
        }
        calls.push(
          this.scripts.addIfNew([`${base}meta`], args).then((flags) => {
            (flags as number[]).forEach((flag, j) => {
              result[chunk[j] as number] = flag === 1;
            });
          }),
        );
      }
    }
    await Promise.all(calls);
    return result;
  }

  /** The script's arguments before the items: layer keys' base, layer 0's capacity, error rate, expansion, add or test. */
  private args(shard: number, adding: boolean): (string | number)[] {
    const perShardCapacity = Math.max(1, Math.ceil(this.options.capacity / this.options.shards));
    return [`${bloomKeyBase(this.options.prefix, shard)}b:`, perShardCapacity, this.options.errorRate, 2, adding ? 1 : 0];
  }

  async info(): Promise<BloomInfo> {
    let items = 0;
    let bytes = 0;
    let layers = 0;
    for (let shard = 0; shard < this.options.shards; shard += 1) {
      const base = bloomKeyBase(this.options.prefix, shard);
      const meta = await this.redis.hgetall(`${base}meta`);
      const count = Number(meta.layers ?? 0);
      layers = Math.max(layers, count);
      for (let i = 0; i < count; i += 1) {
        items += Number(meta[`n${i}`] ?? 0);
        bytes += Number((await this.redis.memory('USAGE', `${base}b:${i}`)) ?? 0);
      }
      bytes += Number((await this.redis.memory('USAGE', `${base}meta`)) ?? 0);
    }
    return { backend: this.backend, items, bytes, capacity: this.options.capacity, errorRate: this.options.errorRate, layers };
  }

  async clear(): Promise<void> {
    for (let shard = 0; shard < this.options.shards; shard += 1) {
      const base = bloomKeyBase(this.options.prefix, shard);
      const meta = await this.redis.hgetall(`${base}meta`);
      const keys = [`${base}meta`];
      for (let i = 0; i < Number(meta.layers ?? 0); i += 1) keys.push(`${base}b:${i}`);
      await this.redis.unlink(...keys);
    }
  }
}
