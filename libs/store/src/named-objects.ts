import { randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { ErrorCode, TrawlError } from '@trawl/core';
import { s3Sdk } from './s3-sdk.js';
import { createS3Client, isNotFound, normalizePrefix, type S3ContentStoreOptions } from './s3-store.js';

/**
 * Objects under names the caller chooses (seen-set snapshots), beside the content-addressed
 * bodies: unlike a body, such an object may be listed and deleted. A `put` is atomic: a reader
 * sees the whole object or none (a temp file renamed into place; one S3 PutObject).
 */
export interface NamedObjects {
  put(name: string, data: Uint8Array): Promise<void>;
  /** The object's bytes, or null when there is none of that name. */
  get(name: string): Promise<Buffer | null>;
  /** The names that start with `prefix`, in no particular order. */
  list(prefix: string): Promise<string[]>;
  /** Removes these objects (absent ones are no error). */
  delete(names: readonly string[]): Promise<void>;
  /** Releases connections. Idempotent. */
  close(): void;
}

/** Names are relative paths of plain segments: never absolute, never `..`, never empty parts. */
const NAME = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;
function checkName(name: string): string {
  if (!NAME.test(name) || name.split('/').some((part) => part === '.' || part === '..')) {
    throw new TrawlError(ErrorCode.Store, `not an object name: ${JSON.stringify(name.slice(0, 100))}`, { action: 'fail' });
  }
  return name;
}

/** Named objects as files under `dir` (`<TRAWL_CONTENT_DIR>/snapshots` for the seen-set's). */
export class LocalNamedObjects implements NamedObjects {
  constructor(
    private readonly dir: string,
    private readonly fsync = true,
  ) {}

  async put(name: string, data: Uint8Array): Promise<void> {
    const path = join(this.dir, checkName(name));
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    const file = await open(temp, 'w');
    try {
      await file.writeFile(data);
      if (this.fsync) await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  }

  async get(name: string): Promise<Buffer | null> {
    try {
      return await readFile(join(this.dir, checkName(name)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new TrawlError(ErrorCode.Store, `reading ${name} failed`, { action: 'retry', cause: error });
    }
  }

  async list(prefix: string): Promise<string[]> {
    let entries: Dirent[];
    try {
      entries = await readdir(this.dir, { recursive: true, withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new TrawlError(ErrorCode.Store, `listing ${this.dir} failed`, { action: 'retry', cause: error });
    }
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => relative(this.dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
      .filter((name) => name.startsWith(prefix) && !name.endsWith('.tmp') && NAME.test(name));
  }

  async delete(names: readonly string[]): Promise<void> {
    await Promise.all(names.map((name) => rm(join(this.dir, checkName(name)), { force: true })));
    // Folders left empty go too (a snapshot is a folder): rmdir refuses one that is not empty.
    const folders = new Set(names.map((name) => dirname(join(this.dir, name))));
    await Promise.all([...folders].filter((folder) => folder !== this.dir).map((folder) => rmdir(folder).catch(() => undefined)));
  }

  close(): void {}
}

/** Where and how: as for the content store in the same bucket (`prefix`: the folder's own). */
export type S3NamedObjectsOptions = Pick<S3ContentStoreOptions, 'bucket' | 'prefix' | 'endpoint' | 'region' | 'forcePathStyle' | 'maxAttempts' | 'client'>;

/** Named objects in an S3-compatible bucket, under `prefix`. */
export class S3NamedObjects implements NamedObjects {
  private readonly s3: Promise<S3Client>;
  private readonly prefix: string;

  constructor(private readonly options: S3NamedObjectsOptions) {
    this.prefix = normalizePrefix(options.prefix ?? '');
    this.s3 = createS3Client(options);
  }

  async put(name: string, data: Uint8Array): Promise<void> {
    const { PutObjectCommand } = (await s3Sdk()).client;
    const command = new PutObjectCommand({ Bucket: this.options.bucket, Key: this.prefix + checkName(name), Body: data });
    const s3 = await this.s3;
    await this.attempt(`writing ${name}`, () => s3.send(command));
  }

  async get(name: string): Promise<Buffer | null> {
    try {
      const { GetObjectCommand } = (await s3Sdk()).client;
      const object = await (await this.s3).send(new GetObjectCommand({ Bucket: this.options.bucket, Key: this.prefix + checkName(name) }));
      return object.Body === undefined ? null : Buffer.from(await object.Body.transformToByteArray());
    } catch (error) {
      if (isNotFound(error)) return null;
      throw this.failure(`reading ${name}`, error);
    }
  }

  async list(prefix: string): Promise<string[]> {
    const { ListObjectsV2Command } = (await s3Sdk()).client;
    const s3 = await this.s3;
    const names: string[] = [];
    let token: string | undefined;
    do {
      const command = new ListObjectsV2Command({ Bucket: this.options.bucket, Prefix: this.prefix + prefix, ...(token === undefined ? {} : { ContinuationToken: token }) });
      const page = await this.attempt(`listing ${prefix}`, () => s3.send(command));
      for (const object of page.Contents ?? []) if (object.Key !== undefined) names.push(object.Key.slice(this.prefix.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return names;
  }

  async delete(names: readonly string[]): Promise<void> {
    // One DeleteObject each: DeleteObjects needs a Content-MD5 that some S3-compatible servers check differently.
    const { DeleteObjectCommand } = (await s3Sdk()).client;
    const s3 = await this.s3;
    for (const name of names) {
      const command = new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.prefix + checkName(name) });
      await this.attempt(`deleting ${name}`, () => s3.send(command));
    }
  }

  close(): void {
    void this.s3.then((s3) => s3.destroy(), () => undefined);
  }

  private async attempt<T>(doing: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw this.failure(doing, error);
    }
  }

  private failure(doing: string, error: unknown): TrawlError {
    return new TrawlError(ErrorCode.Store, `${doing} in S3 bucket "${this.options.bucket}" failed: ${(error as Error).name}`, { action: 'retry', cause: error });
  }
}
