import { Readable } from 'node:stream';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { ErrorCode, TrawlError } from '@trawl/core';
import {
  type Compression,
  type ContentStore,
  contentHash,
  contentKey,
  createCompressor,
  FORMAT_SUFFIX,
  hashOfKey,
  readOrder,
  type PutResult,
  type StoredFormat,
  storedFormat,
  unpackStored,
} from './content-store.js';
import { KnownKeys, PutsInFlight } from './known-keys.js';
import { s3Sdk } from './s3-sdk.js';

export interface S3ContentStoreOptions {
  bucket: string;
  /** Key prefix inside the bucket ("crawl-1" and "crawl-1/" are the same); default none. */
  prefix?: string;
  /** An S3-compatible endpoint (MinIO, Ceph, R2, s3rver); unset: AWS itself. */
  endpoint?: string;
  /** Unset: the SDK's own chain (AWS_REGION, ~/.aws/config). */
  region?: string;
  /** Path-style URLs (`endpoint/bucket/key`), which most S3-compatible servers need. Default false. */
  forcePathStyle?: boolean;
  /** Tries per S3 request for transient failures (throttling, 5xx, resets, timeouts). Default 4. */
  maxAttempts?: number;
  /** How new bodies are compressed, as in the local store. Default brotli; objects of either format are read. */
  compression?: Compression;
  /** zlib level 0–9 under gzip, as in the local store. Default 6. */
  gzipLevel?: number;
  /** Brotli quality 0–11 under brotli. Default 1. */
  brotliQuality?: number;
  /** Bodies this process remembers storing (skips the HEAD). Default 100,000. */
  knownCacheSize?: number;
  /**
   * Extra client settings, merged last (tests pass s3rver's fixed credentials here). trawl never
   * reads credentials itself: the SDK's default chain finds them (AWS_ACCESS_KEY_ID, profiles,
   * instance roles).
   */
  client?: Partial<S3ClientConfig>;
}

/** The objects' Content-Type: brotli has no registered media type, so the common unofficial one. */
const CONTENT_TYPE: Readonly<Record<Compression, string>> = { brotli: 'application/x-brotli', gzip: 'application/gzip' };

/** Connect within 5 s; a socket silent for 60 s is a transient failure (the SDK retries it). */
const CONNECTION_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 60_000;

/**
 * The S3 client of a store's options: the same endpoint, retries, checksums and timeouts for every
 * object trawl keeps. A promise, as the SDK is loaded on first use (see s3-sdk.ts); never rejected
 * unobserved.
 */
export function createS3Client(options: Pick<S3ContentStoreOptions, 'endpoint' | 'region' | 'forcePathStyle' | 'maxAttempts' | 'client'>): Promise<S3Client> {
  const client = s3Sdk().then(({ client: { S3Client } }) =>
    new S3Client({
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      ...(options.region === undefined ? {} : { region: options.region }),
      forcePathStyle: options.forcePathStyle ?? false,
      maxAttempts: options.maxAttempts ?? 4,
      retryMode: 'standard',
      // Checksums only where S3 demands them: with the default ('WHEN_SUPPORTED') the SDK wraps
      // streamed bodies in aws-chunked encoding, which S3-compatible servers (s3rver among them)
      // store verbatim, corrupting the object.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
      ...options.client,
    }),
  );
  client.catch(() => undefined);
  return client;
}

/**
 * Bodies as compressed objects in an S3-compatible bucket, laid out like the local store:
 * `<prefix>/<h0h1>/<sha256>.br` (or `.gz`). Same key (`sha256:<hex>`), same hash, same bytes, so
 * a crawl can move between the two (copy the directory into the bucket) without touching
 * `crawled_pages.storage_key`. A body is read under either format's name; the existence check
 * before an upload asks only for this store's format (one HEAD per new body), so a body stored
 * earlier in the other format is uploaded once more in this one.
 *
 * Content addressing makes a put idempotent: a bounded in-process cache of stored hashes, then a
 * HEAD (about a tenth of a PUT's price, and the answer for every duplicate body), then a streamed
 * upload. Two processes racing on one new body both upload identical bytes; the last write wins
 * and nothing is lost. (`If-None-Match: *` would settle the race on AWS, but s3rver and older
 * S3-compatible servers ignore or reject it, and the race is harmless.)
 *
 * Retries: the SDK's standard strategy (exponential back-off with jitter, a retry quota) with
 * `maxAttempts` tries per request; what still fails is an `ERR_STORE` `retry` for the job layer.
 * A missing bucket and refused credentials are fatal and name the bucket.
 */
export class S3ContentStore implements ContentStore {
  readonly bucket: string;
  private readonly prefix: string;
  private readonly s3: Promise<S3Client>;
  private readonly format: StoredFormat;
  private readonly inFlight = new PutsInFlight();
  private readonly known: KnownKeys;
  private closed = false;

  constructor(options: S3ContentStoreOptions) {
    const { bucket, prefix = '', maxAttempts = 4, knownCacheSize = 100_000 } = options;
    if (typeof bucket !== 'string' || bucket.trim() === '') {
      throw new TrawlError(ErrorCode.ConfigInvalid, 'S3ContentStore: a bucket is required (TRAWL_S3_BUCKET)', { action: 'fatal' });
    }
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
      throw new TrawlError(ErrorCode.ConfigInvalid, `S3ContentStore: maxAttempts must be ≥ 1, got ${maxAttempts}`, { action: 'fatal' });
    }
    this.bucket = bucket;
    this.prefix = normalizePrefix(prefix);
    this.format = storedFormat('S3ContentStore', options, 6);
    this.known = new KnownKeys(knownCacheSize);
    this.s3 = createS3Client({ ...options, maxAttempts });
  }

  /** The object key of a body hash: `<prefix><h0h1>/<sha256>.br` (this store's format unless another is named). */
  objectKey(hash: string, compression: Compression = this.format.compression): string {
    return `${this.prefix}${hash.slice(0, 2)}/${hash}${FORMAT_SUFFIX[compression]}`;
  }

  async check(): Promise<void> {
    try {
      const { HeadBucketCommand } = (await s3Sdk()).client;
      await (await this.s3).send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (error) {
      const failure = this.error('checking the bucket', error, true);
      throw failure.action === 'fatal' ? failure : new TrawlError(failure.code, failure.message, { action: 'fatal', cause: error });
    }
  }

  async put(body: Uint8Array): Promise<PutResult> {
    if (this.closed) throw new TrawlError(ErrorCode.Store, 'content store is closed', { action: 'retry' });
    const hash = contentHash(body);
    return this.inFlight.run(hash, () => this.write(hash, body));
  }

  async get(key: string): Promise<Buffer | null> {
    const hash = hashOfKey(key);
    for (const compression of readOrder(this.format.compression)) {
      let compressed: Buffer;
      try {
        const { GetObjectCommand } = (await s3Sdk()).client;
        const object = await (await this.s3).send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(hash, compression) }));
        if (object.Body === undefined) continue;
        compressed = Buffer.from(await object.Body.transformToByteArray());
      } catch (error) {
        if (isNotFound(error)) continue;
        throw this.error(`reading ${key}`, error);
      }
      return unpackStored(key, hash, compressed, compression);
    }
    return null;
  }

  async has(key: string): Promise<boolean> {
    const hash = hashOfKey(key);
    if (this.known.has(hash)) return true;
    for (const compression of readOrder(this.format.compression)) if (await this.exists(hash, compression)) return true;
    return false;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.inFlight.settled();
    (await this.s3).destroy();
  }

  private async write(hash: string, body: Uint8Array): Promise<PutResult> {
    const key = contentKey(hash);
    if (this.known.has(hash) || (await this.exists(hash))) {
      this.known.add(hash);
      return { key, contentHash: hash, storedBytes: 0, existed: true };
    }
    let storedBytes = 0;
    const compress = createCompressor(this.format, body.byteLength);
    compress.on('data', (chunk: Buffer) => (storedBytes += chunk.length));
    // A stream of unknown length: lib-storage buffers it into one PutObject below its part size
    // (5 MiB) and into a multipart upload above, and every buffered part can be retried.
    const { Upload } = (await s3Sdk()).storage;
    const upload = new Upload({
      client: await this.s3,
      params: { Bucket: this.bucket, Key: this.objectKey(hash), Body: Readable.from([Buffer.from(body.buffer, body.byteOffset, body.byteLength)]).pipe(compress), ContentType: CONTENT_TYPE[this.format.compression] },
    });
    try {
      await upload.done();
    } catch (error) {
      throw this.error(`writing ${key}`, error);
    }
    this.known.add(hash);
    return { key, contentHash: hash, storedBytes, existed: false };
  }


  private async exists(hash: string, compression: Compression = this.format.compression): Promise<boolean> {
    try {
      const { HeadObjectCommand } = (await s3Sdk()).client;
      await (await this.s3).send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(hash, compression) }));
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw this.error(`checking ${contentKey(hash)}`, error);
    }
  }

  /**
   * One place that turns an S3 failure into what happens next. `bucketRequest`: the request
   * named only the bucket, so a bare 404 means the bucket is missing.
   */
  private error(doing: string, error: unknown, bucketRequest = false): TrawlError {
    const status = httpStatus(error);
    const name = errorName(error);
    if (name === 'NoSuchBucket' || (bucketRequest && status === 404)) {
      return new TrawlError(ErrorCode.StoreBucketMissing, `S3 bucket "${this.bucket}" does not exist (TRAWL_S3_BUCKET)`, {
        action: 'fatal',
        cause: error,
        details: { bucket: this.bucket },
      });
    }
    if (status === 403 || name === 'AccessDenied' || name === 'InvalidAccessKeyId' || name === 'SignatureDoesNotMatch') {
      return new TrawlError(ErrorCode.StoreAccessDenied, `access to S3 bucket "${this.bucket}" denied (${name}): check the AWS credentials and the bucket policy`, {
        action: 'fatal',
        cause: error,
        details: { bucket: this.bucket },
      });
    }
    if (isRegionMissing(error)) {
      return new TrawlError(ErrorCode.ConfigInvalid, 'S3 region is not set: set TRAWL_S3_REGION (or AWS_REGION)', { action: 'fatal', cause: error });
    }
    const message = `${doing} in S3 bucket "${this.bucket}" failed: ${name}${status === undefined ? '' : ` (HTTP ${status})`}`;
    // Other client errors (4xx) will not pass on a retry of the same request; everything else
    // (5xx, throttling, resets, timeouts) has already been retried by the SDK and goes back to
    // the queue for a later attempt.
    const permanent = status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
    return new TrawlError(ErrorCode.Store, message, { action: permanent ? 'fail' : 'retry', cause: error, details: { bucket: this.bucket } });
  }
}

export function normalizePrefix(prefix: string): string {
  const trimmed = prefix.trim().replace(/^\/+/, '');
  return trimmed === '' || trimmed.endsWith('/') ? trimmed : `${trimmed}/`;
}

function httpStatus(error: unknown): number | undefined {
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

function errorName(error: unknown): string {
  // The SDK's service errors (S3ServiceException: `$fault` is 'client' or 'server') are named by their error code.
  if (error instanceof Error && typeof (error as { $fault?: unknown }).$fault === 'string') return error.name;
  if (error instanceof Error) return (error as { code?: string }).code ?? error.name;
  return String(error);
}

/**
 * The object is absent. A HEAD answers a bare 404 whether the key or the bucket is missing;
 * the upload that follows then fails with NoSuchBucket, which is fatal.
 */
export function isNotFound(error: unknown): boolean {
  const name = errorName(error);
  return name !== 'NoSuchBucket' && (name === 'NoSuchKey' || name === 'NotFound' || httpStatus(error) === 404);
}

function isRegionMissing(error: unknown): boolean {
  return error instanceof Error && /region is missing/i.test(error.message);
}
