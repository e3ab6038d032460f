import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { Command } from 'ioredis';
import { bindScripts, loadScripts, type RedisClient, type ScriptCaller } from '@trawl/redis';
import { type BloomBackendName, type BloomOptions, bloomKeyBase } from './bloom.js';
import { createdAtOf, mismatch, parseManifest, SNAPSHOT_FORMAT, type SnapshotManifest, type SnapshotPart, type SnapshotShard, type SnapshotTarget, snapshotId } from './snapshot-format.js';

const SCRIPTS = loadScripts(import.meta.url, '../lua', ['adoptRestored-2']);
// Async zlib runs on the thread pool, not on the event loop.
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
/** How long a snapshot may take to read before it is discarded as possibly torn by a wipe. */
const MARKER_TTL_MS = 6 * 3_600_000;
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/**
 * Where snapshots are kept: named objects (the content store's `seen-snapshots` folder). The
 * same shape as `@trawl/store`'s NamedObjects, which the composition root passes in.
 */
export interface SnapshotObjects {
  put(name: string, data: Uint8Array): Promise<void>;
  get(name: string): Promise<Buffer | null>;
  list(prefix: string): Promise<string[]>;
  delete(names: readonly string[]): Promise<void>;
}

export interface SeenSnapshotOptions {
  /** Bytes per GETRANGE / SETRANGE: each call holds Redis for about as long as copying this many bytes. Default 256 KiB. */
  readBytes?: number;
  /** Bytes of a Lua bitmap layer per stored object. Default 8 MiB. */
  partBytes?: number;
}

/** What the crawl's `urls` table says before the filter is read (`Database.maxUrlId`, `urlsTableId`). */
export interface UrlCoverage {
  maxUrlId: number;
  urlsTable: string;
}

export type TakeResult =
  | { id: string; coversUrlId: number; items: number; parts: number; storedBytes: number; durationMs: number; pruned: number }
  | { skipped: string };

export type LoadResult = { id: string; coversUrlId: number; parts: number; durationMs: number; refused: string[] } | { fallback: string; refused: string[] };

/** A snapshot refused while loading (a part missing or not matching the manifest). */
class Refused extends Error {}

/**
 * Snapshots of the seen-set's Bloom filter, so a crawl whose Redis lost its data rebuilds the
 * filter from the newest snapshot plus the URLs recorded after it instead of from every URL.
 *
 * A snapshot holds each shard's filter as the backend stores it (Lua bitmap: the meta hash and
 * each layer's bitmap read by GETRANGE in `readBytes` steps; RedisBloom: BF.SCANDUMP's chunks),
 * gzip'd, each part with its sha256, and a manifest written last naming them, the filter's
 * parameters and the highest `urls.id` read before the filter was: every URL recorded up to it
 * had been added to the filter by then (discovery adds to the filter before it inserts the row).
 *
 * Loading writes beside the live filter (restore keys in the shard's slot), checking every part,
 * and only when every shard is restored puts each in place in one step (RENAME, or a script for
 * the bitmap's layers): a corrupt or partial snapshot never touches the live filter.
 */
export class SeenSnapshots {
  private readonly scripts: Record<'adoptRestored', ScriptCaller>;
  private readonly readBytes: number;
  private readonly partBytes: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly bloom: BloomOptions,
    private readonly backend: BloomBackendName,
    private readonly objects: SnapshotObjects,
    options: SeenSnapshotOptions = {},
  ) {
    this.scripts = bindScripts(redis, SCRIPTS);
    this.readBytes = Math.max(1, options.readBytes ?? 256 * 1024);
    this.partBytes = Math.max(this.readBytes, options.partBytes ?? 8 * 1024 * 1024);
  }

  /** Every snapshot of this namespace lives under `<namespace>/<id>/`. */
  private get root(): string {
    return `${this.bloom.prefix}/`;
  }

  /** When the newest complete snapshot was taken (ms), or null when there is none. */
  async newestAt(): Promise<number | null> {
    const [newest] = await this.list();
    return newest === undefined ? null : createdAtOf(newest);
  }

  /**
   * Takes a snapshot and keeps the newest `keep`. `cover` is asked first (the highest URL id must
   * be taken before the filter is read); `intact` before and after the read: a filter read while
   * Redis had lost the crawl (before its rebuild) would cover URLs it does not hold.
   */
  async take(cover: () => Promise<UrlCoverage>, intact: () => Promise<boolean>, keep: number, now: number = Date.now()): Promise<TakeResult> {
    const started = Date.now();
    if (!(await intact())) return { skipped: 'the crawl\'s Redis data is missing (waiting for trawl frontier rebuild)' };
    const id = snapshotId(now, randomBytes(4).toString('hex'));
    // A marker that a wipe takes with it: a filter Redis lost and a rebuild restored while it was
    // being read would pass the intact checks at both ends, yet the copy could mix the two.
    const marker = `${this.bloom.prefix}:seen-snapshot:${id}`;
    await this.redis.set(marker, '1', 'PX', MARKER_TTL_MS);
    try {
      return await this.copy(id, now, started, cover, async () => (await intact()) && (await this.redis.exists(marker)) === 1, keep);
    } finally {
      await this.redis.unlink(marker);
    }
  }

  private async copy(id: string, now: number, started: number, cover: () => Promise<UrlCoverage>, intact: () => Promise<boolean>, keep: number): Promise<TakeResult> {
    const coverage = await cover();
    const shardData: SnapshotShard[] = [];
    let items = 0;
    let storedBytes = 0;
    // A copy that is not kept takes its parts with it (a run that dies leaves them to `prune`).
    const discard = async (skipped: string): Promise<TakeResult> => {
      await this.objects.delete(shardData.flatMap((s) => s.parts.map((p) => p.name)));
      return { skipped };
    };
    for (let shard = 0; shard < this.bloom.shards; shard += 1) {
      const dumped = this.backend === 'lua-bitmap' ? await this.dumpBitmap(id, shard) : await this.dumpRedisBloom(id, shard);
      shardData.push(dumped.shard);
      if ('skipped' in dumped) return discard(dumped.skipped);
      items += dumped.items;
      storedBytes += dumped.storedBytes;
    }
    if (!(await intact())) return discard('Redis lost the crawl\'s data while the filter was read');
    const manifest: SnapshotManifest = {
      format: SNAPSHOT_FORMAT,
      id,
      createdAt: now,
      backend: this.backend,
      capacity: this.bloom.capacity,
      errorRate: this.bloom.errorRate,
      shards: this.bloom.shards,
      coversUrlId: coverage.maxUrlId,
      urlsTable: coverage.urlsTable,
      items,
      shardData,
    };
    await this.objects.put(`${this.root}${id}/manifest.json`, Buffer.from(JSON.stringify(manifest)));
    const pruned = await this.prune(keep);
    const parts = shardData.reduce((n, s) => n + s.parts.length, 0);
    return { id, coversUrlId: coverage.maxUrlId, items, parts, storedBytes, durationMs: Date.now() - started, pruned };
  }

  /** The manifests' ids, newest first. */
  async list(): Promise<string[]> {
    const names = await this.objects.list(this.root);
    return names
      .filter((name) => name.endsWith('/manifest.json'))
      .map((name) => name.slice(this.root.length, -'/manifest.json'.length))
      .sort()
      .reverse();
  }

  /**
   * Keeps the newest `keep` snapshots; removes older ones, and the parts of snapshots that never
   * got a manifest (a run that died) once a newer snapshot is complete. Returns the snapshots removed.
   */
  async prune(keep: number): Promise<number> {
    const names = await this.objects.list(this.root);
    const complete = (await this.list()).slice(0, Math.max(1, keep));
    const oldestKept = complete[complete.length - 1];
    if (oldestKept === undefined) return 0;
    const drop = names.filter((name) => {
      const id = name.slice(this.root.length).split('/')[0] ?? '';
      return !complete.includes(id) && id < oldestKept;
    });
    // Manifests first: an interrupted prune leaves every listed snapshot whole, never a manifest
    // whose parts are gone (the parts left are removed by the next prune).
    const manifests = drop.filter((name) => name.endsWith('/manifest.json'));
    await this.objects.delete(manifests);
    await this.objects.delete(drop.filter((name) => !name.endsWith('/manifest.json')));
    return manifests.length;
  }

  /**
   * Loads the newest snapshot that matches `target` into the filter (replacing what the filter
   * holds). Falls back (returns why) when none does: the caller then adds every URL. Snapshots
   * refused on the way are listed with their reasons.
   */
  async load(target: SnapshotTarget): Promise<LoadResult> {
    const started = Date.now();
    const refused: string[] = [];
    const ids = await this.list();
    if (ids.length === 0) return { fallback: 'no snapshot of this namespace in the store', refused };
    for (const id of ids) {
      const bytes = await this.objects.get(`${this.root}${id}/manifest.json`);
      const parsed = bytes === null ? { problem: 'its manifest is gone' } : parseManifest(bytes);
      if ('problem' in parsed) {
        refused.push(`${id}: ${parsed.problem}`);
        continue;
      }
      const problem = mismatch(parsed, target);
      if (problem !== null) {
        refused.push(`${id}: ${problem}`);
        continue;
      }
      try {
        await this.restore(parsed);
      } catch (error) {
        await this.dropRestoreKeys(parsed).catch(() => undefined);
        if (!(error instanceof Refused)) throw error;
        refused.push(`${id}: ${error.message}`);
        continue;
      }
      const parts = parsed.shardData.reduce((n, s) => n + s.parts.length, 0);
      return { id, coversUrlId: parsed.coversUrlId, parts, durationMs: Date.now() - started, refused };
    }
    return { fallback: `no usable snapshot (${refused.join('; ')})`, refused };
  }

  // ---- Lua bitmap ----

  private async dumpBitmap(id: string, shard: number): Promise<{ shard: SnapshotShard; items: number; storedBytes: number }> {
    const base = bloomKeyBase(this.bloom.prefix, shard);
    // The meta first: layers added after it hold only items added after the URL id was taken.
    const meta = await this.redis.hgetall(`${base}meta`);
    const layers = Number(meta.layers ?? 0);
    const parts: SnapshotPart[] = [];
    let items = 0;
    let storedBytes = 0;
    for (let layer = 0; layer < layers; layer += 1) {
      items += Number(meta[`n${layer}`] ?? 0);
      const key = `${base}b:${layer}`;
      const length = await this.redis.strlen(key);
      for (let offset = 0; offset < length; offset += this.partBytes) {
        const end = Math.min(length, offset + this.partBytes);
        const reads: Buffer[] = [];
        for (let at = offset; at < end; at += this.readBytes) {
          reads.push(await this.redis.getrangeBuffer(key, at, Math.min(end, at + this.readBytes) - 1));
        }
        const data = Buffer.concat(reads);
        const name = `${this.root}${id}/s${shard}-l${layer}-${offset}.gz`;
        const stored = await gzipAsync(data, { level: 1 });
        await this.objects.put(name, stored);
        storedBytes += stored.length;
        parts.push({ name, layer, offset, bytes: data.length, sha256: sha256(data) });
      }
    }
    return { shard: { shard, meta, parts }, items, storedBytes };
  }

  // ---- RedisBloom ----

  private async bfFilters(key: string): Promise<{ filters: number; items: number } | null> {
    if ((await this.redis.exists(key)) === 0) return null;
    const raw = (await this.redis.call('BF.INFO', key)) as (string | number)[];
    const fields = new Map<string, number>();
    for (let i = 0; i + 1 < raw.length; i += 2) fields.set(String(raw[i]).toLowerCase(), Number(raw[i + 1]));
    return { filters: fields.get('number of filters') ?? 0, items: fields.get('number of items inserted') ?? 0 };
  }

  private async dumpRedisBloom(id: string, shard: number): Promise<{ shard: SnapshotShard; items: number; storedBytes: number } | { shard: SnapshotShard; skipped: string }> {
    const key = `${bloomKeyBase(this.bloom.prefix, shard)}bf`;
    const before = await this.bfFilters(key);
    if (before === null) return { shard: { shard, parts: [] }, items: 0, storedBytes: 0 };
    const parts: SnapshotPart[] = [];
    let storedBytes = 0;
    let iter = 0;
    for (let n = 0; ; n += 1) {
      // Sent as a Command with a binary reply: ioredis' callBuffer mangles its arguments when auto-pipelined.
      const [next, data] = (await this.redis.sendCommand(new Command('BF.SCANDUMP', [key, iter], { replyEncoding: null }))) as [number, Buffer];
      iter = Number(next);
      if (iter === 0) break;
      const name = `${this.root}${id}/s${shard}-c${n}.gz`;
      const stored = await gzipAsync(data, { level: 1 });
      await this.objects.put(name, stored);
      storedBytes += stored.length;
      parts.push({ name, iter, bytes: data.length, sha256: sha256(data) });
    }
    // A sub-filter added while the chunks were read is not in the header the first chunk carries:
    // such a dump would not load. The next run tries again.
    const after = await this.bfFilters(key);
    if (after === null || after.filters !== before.filters) return { shard: { shard, parts }, skipped: `shard ${shard} grew a sub-filter while it was read` };
    return { shard: { shard, parts }, items: before.items, storedBytes };
  }

  // ---- Loading ----

  private restoreKeys(shard: number): { base: string; meta: string; layers: string; bf: string } {
    const base = bloomKeyBase(this.bloom.prefix, shard);
    return { base, meta: `${base}restore:meta`, layers: `${base}restore:b:`, bf: `${base}restore:bf` };
  }

  private async part(part: SnapshotPart): Promise<Buffer> {
    const stored = await this.objects.get(part.name);
    if (stored === null) throw new Refused(`part ${part.name} is missing`);
    let data: Buffer;
    try {
      data = await gunzipAsync(stored);
    } catch {
      throw new Refused(`part ${part.name} is corrupt (not gzip)`);
    }
    if (data.length !== part.bytes || sha256(data) !== part.sha256) throw new Refused(`part ${part.name} does not match its checksum`);
    return data;
  }

  private async restore(manifest: SnapshotManifest): Promise<void> {
    await this.dropRestoreKeys(manifest);
    // Every shard into its restore keys first (any refusal leaves the live filter untouched) …
    for (const shard of manifest.shardData) {
      const keys = this.restoreKeys(shard.shard);
      if (manifest.backend === 'lua-bitmap') {
        for (const part of shard.parts) {
          const data = await this.part(part);
          for (let at = 0; at < data.length; at += this.readBytes) {
            await this.redis.setrange(`${keys.layers}${part.layer}`, (part.offset as number) + at, data.subarray(at, at + this.readBytes));
          }
        }
        if (shard.meta !== undefined && Object.keys(shard.meta).length > 0) await this.redis.hset(keys.meta, shard.meta);
      } else {
        for (const part of shard.parts) {
          const data = await this.part(part);
          try {
            await this.redis.call('BF.LOADCHUNK', keys.bf, part.iter as number, data);
          } catch (error) {
            throw new Refused(`BF.LOADCHUNK refused part ${part.name}: ${(error as Error).message}`);
          }
        }
      }
    }
    // … then each shard put in place in one step. A shard empty in the snapshot keeps what it has.
    for (const shard of manifest.shardData) {
      const keys = this.restoreKeys(shard.shard);
      if (manifest.backend === 'lua-bitmap') {
        await this.scripts.adoptRestored([`${keys.base}meta`, keys.meta], [`${keys.base}b:`, keys.layers]);
      } else if (shard.parts.length > 0) {
        await this.redis.rename(keys.bf, `${keys.base}bf`);
      }
    }
  }

  private async dropRestoreKeys(manifest: SnapshotManifest): Promise<void> {
    for (const shard of manifest.shardData) {
      const keys = this.restoreKeys(shard.shard);
      const layers = Number(shard.meta?.layers ?? 0);
      // One UNLINK per key: they share the shard's slot, but each stays a single-key command.
      const all = [keys.meta, keys.bf, ...Array.from({ length: layers }, (_, i) => `${keys.layers}${i}`)];
      await Promise.all(all.map((key) => this.redis.unlink(key)));
    }
  }
}
