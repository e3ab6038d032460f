export { isCidr } from './fields.js';
export { DIRECT, type ProxyEntry, type ProxyRule, type ProxyTier, redactProxyUrl } from './proxies.js';
export { ConfigError, listSettings, loadConfig, type LoadConfigOptions, redactSecrets, redactUrlPasswords, type SettingInfo, settingsMarkdownTable } from './load.js';
export {
  type Config,
  type ConfigInput,
  configSchema,
  CRAWLER_VERSION,
  frontierMaxQueued,
  userAgentOf,
  FETCH_HOLD_MARGIN_MS,
  type CrawlPolicyConfig,
  type DashboardConfig,
  type MetricsConfig,
  type DispatchConfig,
  type FetchConfig,
  type PolitenessConfig,
  type RobotsConfig,
  type SeenConfig,
  type ProcessConfig,
  type StoreConfig,
  type DedupConfig,
  type WarcConfig,
  type RenderConfig,
  type WorkerConfig,
} from './schema.js';
export { DEFAULT_PRIORITY_WEIGHTS, type PriorityWeights } from './priority.js';
