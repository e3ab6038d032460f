export {
  Database,
  type DatabaseOptions,
  type DiscoveredUrl,
  ensureDatabase,
  type PageHistory,
  type PageRecord,
  probePostgres,
  type UrlState,
} from './database.js';
export {
  type DuplicateRecord,
  type FirstCapture,
  type IndexedFingerprint,
  MAX_INDEXED_DISTANCE,
  type NearMatch,
  NearDupIndex,
  type NearQuery,
} from './near-dup.js';
export { type PageForExport, pagesForExport, type PagesForExportOptions } from './export-rows.js';
