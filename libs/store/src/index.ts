export {
  type ContentStore,
  contentHash,
  contentKey,
  hashOfKey,
  type PutResult,
} from './content-store.js';
export { LocalContentStore, type LocalContentStoreOptions } from './local-store.js';
export { S3ContentStore, type S3ContentStoreOptions } from './s3-store.js';
export { type ContentStoreConfig, createContentStore, createNamedObjects } from './create.js';
export { LocalNamedObjects, type NamedObjects, S3NamedObjects, type S3NamedObjectsOptions } from './named-objects.js';
