export {
  Database,
  type DatabaseOptions,
  type DiscoveredUrl,
  type InsertDiscoveredResult,
  ensureDatabase,
  type PageHistory,
  type PageDedup,
  type PageRecord,
  type PageRecrawlStats,
  type PageRender,
  type PageText,
  isTransientDbError,
  probePostgres,
  type RebuildRow,
  type SpilledUrl,
  type TakenSpill,
  type RecordPagesResult,
  type RejectedRecord,
  type RecordSitemapsResult,
  type UrlState,
} from './database.js';
export { Freshness, type FreshnessQuery, type FreshnessRow, type PageRecrawlRecord, type RecrawlUpdate, type StoredRecrawlState } from './freshness.js';
export { type DuePage, pageValidators, takeDuePages } from './recrawl-sweep.js';
export { type SitemapPlace, Sitemaps, type SitemapSource } from './sitemaps.js';
export { isDataError } from './isolate.js';
export { storableText, storableTextOrNull } from './text.js';
export {
  type DuplicateRecord,
  type FirstCapture,
  type IndexedFingerprint,
  MAX_INDEXED_DISTANCE,
  type NearMatch,
  NearDupIndex,
  type NearQuery,
  type StoredCapture,
} from './near-dup.js';
export { countPagesForExport, type PageForExport, pagesForExport, type PagesForExportOptions } from './export-rows.js';
export { type KnownUrl, OperatorQueries, type PausedHostRow, type RecentFetch, type RenderOverrideRow } from './operator.js';
