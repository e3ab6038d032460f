import type { BloomBackendName, BloomOptions } from './bloom.js';

/** The manifest's format: a loader refuses any other. */
export const SNAPSHOT_FORMAT = 1;

/** One stored part of a shard: bytes of one layer (Lua bitmap) or one BF.SCANDUMP chunk. */
export interface SnapshotPart {
  /** Object name, relative to the snapshot store. */
  name: string;
  /** Lua bitmap: the layer, and the byte offset of the part in its bitmap. */
  layer?: number;
  offset?: number;
  /** RedisBloom: the iterator BF.SCANDUMP returned with the chunk (BF.LOADCHUNK takes it back). */
  iter?: number;
  /** Raw (uncompressed) length and sha256 hex: a part that does not match is refused. */
  bytes: number;
  sha256: string;
}

export interface SnapshotShard {
  shard: number;
  /** Lua bitmap: the meta hash as read (layers and their parameters). */
  meta?: Record<string, string>;
  parts: SnapshotPart[];
}

/** What a snapshot holds, written last: a snapshot without its manifest does not exist. */
export interface SnapshotManifest {
  format: number;
  id: string;
  createdAt: number;
  backend: BloomBackendName;
  capacity: number;
  errorRate: number;
  shards: number;
  /** Every URL with `urls.id` at most this was in the filter when it was read. */
  coversUrlId: number;
  /** Which `urls` table the ids are of (its OID): a snapshot of a dropped and re-created crawl is refused. */
  urlsTable: string;
  /** Items the filter counted (sum over shards), for the operator. */
  items: number;
  shardData: SnapshotShard[];
}

/** What the running crawl's filter and `urls` table are: a snapshot must match to be loaded. */
export interface SnapshotTarget {
  backend: BloomBackendName;
  options: Pick<BloomOptions, 'capacity' | 'errorRate' | 'shards'>;
  maxUrlId: number;
  urlsTable: string;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
const HEX64 = /^[0-9a-f]{64}$/;

function partProblem(part: unknown, backend: BloomBackendName): string | null {
  if (!isObject(part)) return 'a part is not an object';
  if (typeof part.name !== 'string' || part.name === '') return 'a part has no name';
  if (!isCount(part.bytes) || typeof part.sha256 !== 'string' || !HEX64.test(part.sha256)) return `part ${part.name} has no valid length or sha256`;
  if (backend === 'lua-bitmap' && (!isCount(part.layer) || !isCount(part.offset))) return `part ${part.name} has no layer or offset`;
  if (backend === 'redisbloom' && !(typeof part.iter === 'number' && Number.isSafeInteger(part.iter))) return `part ${part.name} has no iterator`;
  return null;
}

/**
 * Parses a manifest's bytes; returns the reason it is unusable instead of throwing, so the
 * loader can log it and try an older snapshot.
 */
export function parseManifest(bytes: Buffer): SnapshotManifest | { problem: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { problem: 'the manifest is not JSON (truncated or corrupt)' };
  }
  if (!isObject(raw)) return { problem: 'the manifest is not an object' };
  if (raw.format !== SNAPSHOT_FORMAT) return { problem: `format ${JSON.stringify(raw.format)}, this version reads ${SNAPSHOT_FORMAT}` };
  if (raw.backend !== 'lua-bitmap' && raw.backend !== 'redisbloom') return { problem: `unknown backend ${JSON.stringify(raw.backend)}` };
  for (const field of ['createdAt', 'capacity', 'shards', 'coversUrlId', 'items'] as const) {
    if (!isCount(raw[field])) return { problem: `the manifest has no valid ${field}` };
  }
  if (typeof raw.id !== 'string' || typeof raw.urlsTable !== 'string' || typeof raw.errorRate !== 'number') return { problem: 'the manifest has no valid id, urlsTable or errorRate' };
  if (!Array.isArray(raw.shardData) || raw.shardData.length !== raw.shards) return { problem: 'the manifest does not list every shard' };
  const backend = raw.backend;
  for (const [index, shard] of raw.shardData.entries()) {
    if (!isObject(shard) || shard.shard !== index || !Array.isArray(shard.parts)) return { problem: `shard ${index} is malformed` };
    if (backend === 'lua-bitmap' && shard.meta !== undefined && !isObject(shard.meta)) return { problem: `shard ${index} has a malformed meta` };
    for (const part of shard.parts) {
      const problem = partProblem(part, backend);
      if (problem !== null) return { problem };
    }
  }
  return raw as unknown as SnapshotManifest;
}

/**
 * Whether a snapshot may stand in for the running crawl's filter: the same backend, capacity,
 * error rate and shard count (a fingerprint's shard and a layer's bits depend on them), and the
 * same `urls` table, not ahead of it. Returns the reason to fall back, or null.
 */
export function mismatch(manifest: SnapshotManifest, target: SnapshotTarget): string | null {
  const { options } = target;
  if (manifest.backend !== target.backend) return `backend ${manifest.backend}, the crawl's seen-set is ${target.backend}`;
  if (manifest.shards !== options.shards) return `${manifest.shards} shards, TRAWL_SEEN_SHARDS is ${options.shards}`;
  if (manifest.capacity !== options.capacity) return `capacity ${manifest.capacity}, TRAWL_SEEN_CAPACITY is ${options.capacity}`;
  if (manifest.errorRate !== options.errorRate) return `error rate ${manifest.errorRate}, TRAWL_SEEN_ERROR_RATE is ${options.errorRate}`;
  if (manifest.urlsTable !== target.urlsTable) return 'taken of another urls table (the crawl\'s schema was dropped and created again since)';
  if (manifest.coversUrlId > target.maxUrlId) return `covers URL ids up to ${manifest.coversUrlId}, but PostgreSQL's highest is ${target.maxUrlId} (restored from an older backup?)`;
  return null;
}

/** Snapshot ids sort by time: a zero-padded creation time in ms, then a random tail. */
export const snapshotId = (createdAt: number, random: string): string => `${String(createdAt).padStart(15, '0')}-${random}`;
/** When the snapshot of this id was taken (ms; NaN for a name that is not an id). */
export const createdAtOf = (id: string): number => Number(id.slice(0, 15));
