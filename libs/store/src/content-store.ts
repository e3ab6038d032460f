import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, brotliDecompress, constants, createBrotliCompress, createGzip, gunzip, gzip, gzipSync, type BrotliCompress, type Gzip } from 'node:zlib';
import { ErrorCode, TrawlError } from '@trawl/core';

export interface PutResult {
  /** `sha256:<hex>`, the same for every backend (see `contentKey`). */
  key: string;
  /** sha256 hex of the raw (uncompressed) body. */
  contentHash: string;
  /** Compressed bytes written; 0 when the body was already stored. */
  storedBytes: number;
  existed: boolean;
}

/**
 * Where page bodies live. Content-addressed: the key is derived from the sha256 of the body, so
 * identical bodies are stored once and `put` is idempotent (at-least-once delivery of fetch
 * jobs stores nothing new). Bodies are stored compressed (`Compression`); every store reads
 * both formats, so a store written under one setting stays readable under the other.
 */
export interface ContentStore {
  put(body: Uint8Array): Promise<PutResult>;
  /** The decompressed body, or null if no body has that key. */
  get(key: string): Promise<Buffer | null>;
  has(key: string): Promise<boolean>;
  /**
   * Verifies at start-up that the store is usable (the directory is writable, the bucket exists
   * and our credentials reach it), so a misconfigured process stops at once with a fatal
   * TrawlError naming what is wrong instead of dead-lettering every page. Idempotent.
   */
  check(): Promise<void>;
  /** Waits for puts in flight, then releases resources. Idempotent. */
  close(): Promise<void>;
}

export function contentHash(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

const KEY_PREFIX = 'sha256:';
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/**
 * The storage key of a body: `sha256:<hex>`. Deliberately not a backend path, so the
 * `storage_key` recorded in Postgres stays valid when bodies move from a local directory to S3;
 * each backend maps the key onto its own layout.
 */
export function contentKey(hash: string): string {
  return KEY_PREFIX + hash;
}

/** The hash inside a key; throws ERR_STORE (fail) for anything that is not a content key. */
export function hashOfKey(key: string): string {
  const hash = key.startsWith(KEY_PREFIX) ? key.slice(KEY_PREFIX.length) : '';
  if (!HEX_SHA256.test(hash)) {
    throw new TrawlError(ErrorCode.Store, `not a content key: ${JSON.stringify(key.slice(0, 100))}`, {
      action: 'fail',
    });
  }
  return hash;
}

/**
 * How bodies are compressed when stored: brotli (`<sha256>.br`) or gzip (`<sha256>.gz`). Brotli
 * at quality 1 compresses a realistic 57 KB page in about half the CPU of gzip level 1, to a
 * slightly smaller file (see docs/perf-log.md); gzip is there for tools that only read gzip.
 */
export type Compression = 'brotli' | 'gzip';
export const COMPRESSIONS: readonly Compression[] = ['brotli', 'gzip'];

/** What a body is stored as: the format and its level (brotli quality 0–11, zlib level 0–9). */
export interface StoredFormat {
  compression: Compression;
  level: number;
}

/** The file name (or object key) ending of each format. */
export const FORMAT_SUFFIX: Readonly<Record<Compression, string>> = { brotli: '.br', gzip: '.gz' };

const MAX_LEVEL: Readonly<Record<Compression, number>> = { brotli: 11, gzip: 9 };

/** The format a store's options give, checked: a level the format does not have is ERR_CONFIG_INVALID (fatal) naming `who`. */
export function storedFormat(who: string, options: { compression?: Compression; gzipLevel?: number; brotliQuality?: number }, defaultGzipLevel: number): StoredFormat {
  const compression = options.compression ?? 'brotli';
  if (!COMPRESSIONS.includes(compression)) {
    throw new TrawlError(ErrorCode.ConfigInvalid, `${who}: compression must be one of ${COMPRESSIONS.join(', ')}, got ${String(compression)}`, { action: 'fatal' });
  }
  for (const [name, level, max] of [
    ['gzipLevel', options.gzipLevel ?? defaultGzipLevel, MAX_LEVEL.gzip],
    ['brotliQuality', options.brotliQuality ?? 1, MAX_LEVEL.brotli],
  ] as const) {
    if (!Number.isInteger(level) || level < 0 || level > max) {
      throw new TrawlError(ErrorCode.ConfigInvalid, `${who}: ${name} must be 0–${max}, got ${level}`, { action: 'fatal' });
    }
  }
  return { compression, level: compression === 'brotli' ? (options.brotliQuality ?? 1) : (options.gzipLevel ?? defaultGzipLevel) };
}

/** Where a store writing `compression` looks for a body: under its own format first, then under the other. */
export const readOrder = (compression: Compression): readonly Compression[] => (compression === 'brotli' ? ['brotli', 'gzip'] : ['gzip', 'brotli']);

const brotliParams = (format: StoredFormat, bytes: number) => ({ params: { [constants.BROTLI_PARAM_QUALITY]: format.level, [constants.BROTLI_PARAM_SIZE_HINT]: bytes } });

/** A compressing stream for a body of `bytes` (S3's streamed uploads). */
export function createCompressor(format: StoredFormat, bytes: number): BrotliCompress | Gzip {
  return format.compression === 'brotli' ? createBrotliCompress(brotliParams(format, bytes)) : createGzip({ level: format.level });
}

/** A body compressed on the calling thread. */
export function compressSync(body: Uint8Array, format: StoredFormat): Buffer {
  return format.compression === 'brotli' ? brotliCompressSync(body, brotliParams(format, body.byteLength)) : gzipSync(body, { level: format.level });
}

// The async zlib calls run on the libuv thread pool, not on the event loop.
const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);
const gunzipAsync = promisify(gunzip);
const unbrotliAsync = promisify(brotliDecompress);

/** A body compressed on the libuv thread pool. */
export function compressAsync(body: Uint8Array, format: StoredFormat): Promise<Buffer> {
  return format.compression === 'brotli' ? brotliAsync(body, brotliParams(format, body.byteLength)) : gzipAsync(body, { level: format.level });
}

/**
 * A stored body back to its bytes, verified against its key: content addressing makes every
 * read checkable, so a flipped bit is an ERR_STORE failure, not a page.
 */
export async function unpackStored(key: string, hash: string, compressed: Buffer, compression: Compression): Promise<Buffer> {
  let body: Buffer;
  try {
    body = compression === 'brotli' ? await unbrotliAsync(compressed) : await gunzipAsync(compressed);
  } catch (error) {
    throw new TrawlError(ErrorCode.Store, `stored body ${key} is corrupt`, { action: 'fail', cause: error });
  }
  if (contentHash(body) !== hash) {
    throw new TrawlError(ErrorCode.Store, `stored body ${key} does not match its hash`, { action: 'fail' });
  }
  return body;
}
