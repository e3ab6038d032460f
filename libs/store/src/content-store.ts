import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
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
 * jobs stores nothing new). Bodies are stored gzip-compressed.
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

// Async zlib runs on the libuv thread pool, not on the event loop.
const gunzipAsync = promisify(gunzip);

/**
 * A stored (gzip) body back to its bytes, verified against its key: content addressing makes
 * every read checkable, so a flipped bit is an ERR_STORE failure, not a page.
 */
export async function unpackStored(key: string, hash: string, compressed: Buffer): Promise<Buffer> {
  let body: Buffer;
  try {
    body = await gunzipAsync(compressed);
  } catch (error) {
    throw new TrawlError(ErrorCode.Store, `stored body ${key} is corrupt`, { action: 'fail', cause: error });
  }
  if (contentHash(body) !== hash) {
    throw new TrawlError(ErrorCode.Store, `stored body ${key} does not match its hash`, { action: 'fail' });
  }
  return body;
}
