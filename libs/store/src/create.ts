import { join } from 'node:path';
import type { ProcessConfig, StoreConfig, WorkerConfig } from '@trawl/config';
import type { ContentStore } from './content-store.js';
import { LocalContentStore } from './local-store.js';
import { LocalNamedObjects, type NamedObjects, S3NamedObjects, type S3NamedObjectsOptions } from './named-objects.js';
import { S3ContentStore, type S3ContentStoreOptions } from './s3-store.js';

/** The settings `createContentStore` reads: `config.store`, the local directory's two, the compression and the writer thread's priority. */
export interface ContentStoreConfig {
  store: StoreConfig;
  worker: Pick<WorkerConfig, 'contentDir' | 'contentFsync' | 'contentCompression' | 'contentBrotliQuality' | 'contentGzipLevel'>;
  process?: Pick<ProcessConfig, 'nice'>;
}

/**
 * The content store the configuration names (TRAWL_CONTENT_STORE). Call `check()` on it at
 * start-up so a missing bucket or an unwritable directory stops the process at once.
 * `s3Client` adds S3 client settings (tests: s3rver's fixed credentials).
 */
export function createContentStore(config: ContentStoreConfig, s3Client?: S3ContentStoreOptions['client']): ContentStore {
  const { store, worker } = config;
  const format = { compression: worker.contentCompression, brotliQuality: worker.contentBrotliQuality, gzipLevel: worker.contentGzipLevel };
  if (store.backend === 'local') return new LocalContentStore({ dir: worker.contentDir, fsync: worker.contentFsync, ...format, threadNice: config.process?.nice });
  return new S3ContentStore({
    // The schema refuses backend s3 without a bucket; the store repeats the check for callers
    // that build a config by hand.
    bucket: store.s3Bucket ?? '',
    prefix: store.s3Prefix,
    endpoint: store.s3Endpoint,
    region: store.s3Region,
    forcePathStyle: store.s3ForcePathStyle,
    maxAttempts: store.s3MaxAttempts,
    ...format,
    client: s3Client,
  });
}

/**
 * Named objects beside the configured content store, under `folder`: `<TRAWL_CONTENT_DIR>/<folder>`
 * on disk, `<TRAWL_S3_PREFIX><folder>/` in the bucket.
 */
export function createNamedObjects(config: ContentStoreConfig, folder: string, s3Client?: S3NamedObjectsOptions['client']): NamedObjects {
  const { store, worker } = config;
  if (store.backend === 'local') return new LocalNamedObjects(join(worker.contentDir, folder), worker.contentFsync);
  const base = store.s3Prefix === '' || store.s3Prefix.endsWith('/') ? store.s3Prefix : `${store.s3Prefix}/`;
  return new S3NamedObjects({
    bucket: store.s3Bucket ?? '',
    prefix: `${base}${folder}/`,
    endpoint: store.s3Endpoint,
    region: store.s3Region,
    forcePathStyle: store.s3ForcePathStyle,
    maxAttempts: store.s3MaxAttempts,
    client: s3Client,
  });
}
