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
export { Freshness, type FreshnessQuery, type FreshnessRow, type PageRecrawlRecord, type RecrawlUpdate, type StoredRecrawlState } from './freshness.js';
export { type DuePage, makeDueNow, pageValidators, takeDuePages } from './recrawl-sweep.js';
export { Sitemaps } from './sitemaps.js';
