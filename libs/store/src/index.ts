export {
  type ContentStore,
  contentHash,
  contentKey,
  hashOfKey,
  type PutResult,
} from './content-store.js';
export { LocalContentStore, type LocalContentStoreOptions } from './local-store.js';
