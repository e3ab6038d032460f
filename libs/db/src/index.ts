export {
  Database,
  type DatabaseOptions,
  type DiscoveredUrl,
  type DiscoveryResult,
  ensureDatabase,
  type PageHistory,
  type PageRecord,
  probePostgres,
  type RecordResult,
  type RejectedRecord,
  type SitemapResult,
  type UrlState,
} from './database.js';
export { isDataError } from './isolate.js';
export { storableText, storableTextOrNull } from './text.js';
