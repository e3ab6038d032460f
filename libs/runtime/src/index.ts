export { checkNamespaceSettings, type NamespaceSettings, type SeenBackend, settingsKey, settingsRecorded, wipedMessage } from './namespace-settings.js';
export { type BlockedHostEvent, frontierOptions, openAdmission, Runtime, type RuntimeOptions } from './runtime.js';
export { findPostgres, findRedis, findServers, LOCAL_POSTGRES_ADMIN_URL, LOCAL_POSTGRES_URL, LOCAL_REDIS_URL, LOCAL_SERVERS, type LocalServers, redactUrl } from './servers.js';
export { runMain } from './main.js';
export { isLoopback, metricsAuthorizer, serveProcessMetrics } from './metrics.js';
export { pauseBlockedHost, restorePauses } from './pauses.js';
export { restoreRenderOverrides, setRenderOverride } from './render-overrides.js';
export type { AdmissionStatus } from '@trawl/frontier';
