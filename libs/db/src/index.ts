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
