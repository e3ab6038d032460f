import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { ErrorCode, TrawlError } from '@trawl/core';
import { type ContentStore, contentHash, contentKey, hashOfKey, type PutResult } from './content-store.js';

// The async zlib calls run on the libuv thread pool, not on the event loop.
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export interface LocalContentStoreOptions {
  /** Root directory; created on first put. */
  dir: string;
  /** zlib level 0–9. Default 6 (zlib's own default: most of level 9's ratio at a third of the CPU). */
  gzipLevel?: number;
  /**
   * fsync each body before renaming it into place, so that after a power cut the final name
   * holds the whole body or nothing. Default true; turn off only for throwaway crawls.
   */
  fsync?: boolean;
}

/**
 * Errors that no retry will cure: the disk is full or read-only, or `dir` is unusable. They
 * stop the process (the operator has to act) instead of dead-lettering every page in turn.
 */
const FATAL_FS_CODES = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'ENOTDIR', 'EISDIR']);

/**
 * Bodies as gzip files in a local directory: `<dir>/<h0h1>/<h2h3>/<sha256>.gz`, two levels of
 * 256 fan-out so no directory grows past a few thousand entries for ~10^10 bodies.
 *
 * A body is written to a temp file beside its final name, then renamed: rename is atomic within
 * a directory, so a crash never leaves a half body under the final name (a stray `*.tmp` file at
 * worst). Concurrent puts of one body in this process share one write; across processes both
 * renames carry identical bytes, so the loser's overwrite is harmless.
 */
export class LocalContentStore implements ContentStore {
  private readonly dir: string;
  private readonly gzipLevel: number;
  private readonly fsync: boolean;
  private readonly inFlight = new Map<string, Promise<PutResult>>();
  private closed = false;

  constructor(options: LocalContentStoreOptions) {
    const { dir, gzipLevel = 6, fsync = true } = options;
    if (typeof dir !== 'string' || dir === '') {
      throw new TrawlError(ErrorCode.ConfigInvalid, 'LocalContentStore: dir is required', { action: 'fatal' });
    }
    if (!Number.isInteger(gzipLevel) || gzipLevel < 0 || gzipLevel > 9) {
      throw new TrawlError(ErrorCode.ConfigInvalid, `LocalContentStore: gzipLevel must be 0–9, got ${gzipLevel}`, {
        action: 'fatal',
      });
    }
    this.dir = dir;
    this.gzipLevel = gzipLevel;
    this.fsync = fsync;
  }

  async put(body: Uint8Array): Promise<PutResult> {
    this.assertOpen();
    const hash = contentHash(body);
    const pending = this.inFlight.get(hash);
    if (pending !== undefined) {
      await pending;
      return { key: contentKey(hash), contentHash: hash, storedBytes: 0, existed: true };
    }
    const write = this.write(hash, body).finally(() => this.inFlight.delete(hash));
    this.inFlight.set(hash, write);
    return write;
  }

  async get(key: string): Promise<Buffer | null> {
    const hash = hashOfKey(key);
    let compressed: Buffer;
    try {
      compressed = await readFile(this.pathOf(hash));
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return null;
      throw storeError(`reading ${key} failed`, error);
    }
    let body: Buffer;
    try {
      body = await gunzipAsync(compressed);
    } catch (error) {
      throw new TrawlError(ErrorCode.Store, `stored body ${key} is corrupt`, { action: 'fail', cause: error });
    }
    // Content addressing makes every read verifiable: a flipped bit is an error, not a page.
    if (contentHash(body) !== hash) {
      throw new TrawlError(ErrorCode.Store, `stored body ${key} does not match its hash`, { action: 'fail' });
    }
    return body;
  }

  async has(key: string): Promise<boolean> {
    return this.exists(this.pathOf(hashOfKey(key)));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled(this.inFlight.values());
  }

  private async write(hash: string, body: Uint8Array): Promise<PutResult> {
    const key = contentKey(hash);
    const path = this.pathOf(hash);
    if (await this.exists(path)) return { key, contentHash: hash, storedBytes: 0, existed: true };

    const compressed = await gzipAsync(body, { level: this.gzipLevel });
    const temp = join(dirname(path), `.${hash}.${randomUUID()}.tmp`);
    try {
      await mkdir(dirname(path), { recursive: true });
      const file = await open(temp, 'wx');
      try {
        await file.writeFile(compressed);
        if (this.fsync) await file.sync();
      } finally {
        await file.close();
      }
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw storeError(`writing ${key} failed`, error);
    }
    return { key, contentHash: hash, storedBytes: compressed.length, existed: false };
  }

  private pathOf(hash: string): string {
    return join(this.dir, hash.slice(0, 2), hash.slice(2, 4), `${hash}.gz`);
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await stat(path);
      return true;
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return false;
      throw storeError(`checking ${path} failed`, error);
    }
  }

  private assertOpen(): void {
    // Retry, not fail: a job that reaches a closing store goes back to the queue for a worker
    // that is still running.
    if (this.closed) throw new TrawlError(ErrorCode.Store, 'content store is closed', { action: 'retry' });
  }
}

function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function storeError(message: string, cause: unknown): TrawlError {
  const code = errnoCode(cause);
  return new TrawlError(ErrorCode.Store, code === undefined ? message : `${message}: ${code}`, {
    action: code !== undefined && FATAL_FS_CODES.has(code) ? 'fatal' : 'retry',
    cause,
  });
}
