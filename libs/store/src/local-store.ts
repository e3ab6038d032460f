import { randomUUID } from 'node:crypto';
import { rename as renameCallback, writeFile as writeFileCallback } from 'node:fs';
import { mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ErrorCode, TrawlError } from '@trawl/core';
import {
  type Compression,
  compressAsync,
  compressSync,
  type ContentStore,
  contentHash,
  contentKey,
  FORMAT_SUFFIX,
  hashOfKey,
  readOrder,
  type PutResult,
  type StoredFormat,
  storedFormat,
  unpackStored,
} from './content-store.js';
import { DiskWriter } from './disk-writer.js';
import { KnownKeys, PutsInFlight } from './known-keys.js';

/**
 * Bodies up to this size are compressed on the event loop (without the writer thread). Handing
 * one to the thread pool costs ~0.2 ms of CPU whatever its size (a zlib stream and its state, a
 * thread hand-off), while compressing 64 KiB inline takes about as long; larger bodies go to the
 * pool, so no body holds the event loop longer than that.
 */
const INLINE_COMPRESS_MAX_BYTES = 64 * 1024;

// The callback forms: the promise API's FileHandle bookkeeping roughly doubles the CPU of a
// small write (measured: 0.45 vs 0.25 ms per write + rename of a 1 KB file).
const writeFileFast = promisify(writeFileCallback);
const renameFast = promisify(renameCallback);

export interface LocalContentStoreOptions {
  /** Root directory; created on first put. */
  dir: string;
  /** How new bodies are compressed. Default brotli; bodies of either format are read. */
  compression?: Compression;
  /** zlib level 0–9 under gzip. Default 6 (zlib's own default: most of level 9's ratio at a third of the CPU). */
  gzipLevel?: number;
  /** Brotli quality 0–11 under brotli. Default 1. */
  brotliQuality?: number;
  /**
   * fsync each body before renaming it into place, so that after a power cut the final name
   * holds the whole body or nothing. Default true. Without it a crash of the process still
   * never leaves a half body (the rename is atomic); only a power cut can, and the page is
   * re-fetched by the next re-crawl. It costs a disk flush per page, which on a busy crawl
   * ties up the libuv threads that compression and DNS also need.
   */
  fsync?: boolean;
  /** Bodies this process remembers storing (skips even the existence check). Default 100,000. */
  knownCacheSize?: number;
  /**
   * Compress and write on a thread of its own (`DiskWriter`) instead of the event loop. Default
   * true; false keeps everything on the calling thread.
   */
  thread?: boolean;
  /** The writer thread's OS priority (nice; see `lowerThreadPriority`). Default 0: the process's. */
  threadNice?: number;
}

/**
 * Errors that no retry will cure: the disk is full or read-only, or `dir` is unusable. They
 * stop the process (the operator has to act) instead of dead-lettering every page in turn.
 */
const FATAL_FS_CODES = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'ENOTDIR', 'EISDIR']);

/**
 * Bodies as compressed files in a local directory: `<dir>/<h0h1>/<sha256>.br` (or `.gz`, see
 * `Compression`; a body is looked for under its other name too). One level of 256
 * fan-out: a crawl of millions of pages puts tens of thousands of files in a directory, which
 * ext4/xfs index fine, while a second level would cost a mkdir for almost every early body
 * (65,536 directories fill up only after ~10^5 bodies). Beyond a local disk, use object storage.
 *
 * A body is written to a temp file beside its final name, then renamed: rename is atomic within
 * a directory, so a crash never leaves a half body under the final name (a stray `*.tmp` file at
 * worst). Concurrent puts of one body in this process share one write; across processes both
 * renames carry identical bytes, so the loser's overwrite is harmless.
 */
export class LocalContentStore implements ContentStore {
  private readonly dir: string;
  private readonly format: StoredFormat;
  private readonly fsync: boolean;
  private readonly inFlight = new PutsInFlight();
  /** Fan-out directories known to exist: one mkdir per directory per process, not per body. */
  private readonly dirs = new Set<string>();
  private readonly known: KnownKeys;
  private readonly writer: DiskWriter | null;
  private closed = false;

  constructor(options: LocalContentStoreOptions) {
    const { dir, fsync = true, knownCacheSize = 100_000, thread = true, threadNice = 0 } = options;
    if (typeof dir !== 'string' || dir === '') {
      throw new TrawlError(ErrorCode.ConfigInvalid, 'LocalContentStore: dir is required', { action: 'fatal' });
    }
    this.format = storedFormat('LocalContentStore', options, 6);
    this.dir = dir;
    this.fsync = fsync;
    this.known = new KnownKeys(knownCacheSize);
    this.writer = thread ? new DiskWriter(threadNice) : null;
  }

  async put(body: Uint8Array): Promise<PutResult> {
    this.assertOpen();
    const hash = contentHash(body);
    return this.inFlight.run(hash, () => this.write(hash, body));
  }

  async get(key: string): Promise<Buffer | null> {
    const hash = hashOfKey(key);
    for (const compression of readOrder(this.format.compression)) {
      let compressed: Buffer;
      try {
        compressed = await readFile(this.pathOf(hash, compression));
      } catch (error) {
        if (errnoCode(error) === 'ENOENT') continue;
        throw storeError(`reading ${key} failed`, error);
      }
      return unpackStored(key, hash, compressed, compression);
    }
    return null;
  }

  async has(key: string): Promise<boolean> {
    const hash = hashOfKey(key);
    for (const compression of readOrder(this.format.compression)) if (await this.exists(this.pathOf(hash, compression))) return true;
    return false;
  }

  /** Creates `dir` and writes (then removes) a probe file: a read-only or unusable dir is fatal now. */
  async check(): Promise<void> {
    const probe = join(this.dir, `.check.${randomUUID()}.tmp`);
    try {
      await mkdir(this.dir, { recursive: true });
      await writeFile(probe, '', { flag: 'wx' });
      await rm(probe, { force: true });
    } catch (error) {
      const failure = storeError(`content directory ${this.dir} is not writable`, error);
      // At start-up nothing is worth retrying: whatever stops the probe stops every page.
      throw new TrawlError(ErrorCode.Store, failure.message, { action: 'fatal', cause: error });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.inFlight.settled();
    await this.writer?.close();
  }

  private async write(hash: string, body: Uint8Array): Promise<PutResult> {
    const key = contentKey(hash);
    const path = this.pathOf(hash, this.format.compression);
    // No existence check on disk: a body another process (or an earlier run) stored is simply
    // written again under the same name — identical bytes, an atomic rename, one copy. That saves
    // a stat (and the ENOENT it throws) for every new page, which is almost every page.
    if (this.known.has(hash)) return { key, contentHash: hash, storedBytes: 0, existed: true };
    const temp = join(dirname(path), `.${hash}.${randomUUID()}.tmp`);
    if (this.writer) {
      let storedBytes: number;
      try {
        storedBytes = await this.writer.write({ path, temp, body, format: this.format, fsync: this.fsync });
      } catch (error) {
        throw storeError(`writing ${key} failed`, error);
      }
      this.known.add(hash);
      return { key, contentHash: hash, storedBytes, existed: false };
    }

    const compressed = body.byteLength <= INLINE_COMPRESS_MAX_BYTES ? compressSync(body, this.format) : await compressAsync(body, this.format);
    const dir = dirname(path);
    try {
      if (!this.dirs.has(dir)) {
        await mkdir(dir, { recursive: true });
        this.dirs.add(dir);
      }
      if (this.fsync) {
        const file = await open(temp, 'wx');
        try {
          await file.writeFile(compressed);
          await file.sync();
        } finally {
          await file.close();
        }
      } else {
        await writeFileFast(temp, compressed, { flag: 'wx' });
      }
      await renameFast(temp, path);
    } catch (error) {
      this.dirs.delete(dir); // removed behind our back? mkdir again next time
      await rm(temp, { force: true }).catch(() => undefined);
      throw storeError(`writing ${key} failed`, error);
    }
    this.known.add(hash);
    return { key, contentHash: hash, storedBytes: compressed.length, existed: false };
  }

  private pathOf(hash: string, compression: Compression): string {
    return join(this.dir, hash.slice(0, 2), hash + FORMAT_SUFFIX[compression]);
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
