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
export { type KnownUrl, OperatorQueries, type PausedHostRow, type RecentFetch } from './operator.js';
