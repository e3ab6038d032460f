export { type CounterListener, type CounterName, Counters, COUNTERS, type CounterValues } from './counters.js';
export {
  type Candidate,
  candidatesFromLinks,
  hostNotes,
  type LinkContext,
  linkPriority,
  createDiscovery,
  Discovery,
  type DiscoveryParts,
  type DiscoveryResult,
  type LinkSource,
  linkSkipReason,
  PRIORITY,
  seedCandidate,
} from './discovery.js';
export {
  type CrawlPolicy,
  crawlPolicySchema,
  DEFAULT_DEDUP_POLICY,
  PolicyFollower,
  policyFromConfig,
  PolicyStore,
  type ResolvedPolicy,
  resolvePolicy,
  withSeeds,
  withSettings,
} from './policy.js';
export { cachedRefusals } from './robots-verdicts.js';
export { RENDER_OVERRIDES, type RenderOverride, RenderOverrides } from './render-overrides.js';
export { RedisHostVerdicts } from './render-verdicts.js';
export { type TimingListener, type TimingName, Timings, TIMINGS } from './timings.js';
export { FrontierRefill, REFILL_DEFAULTS, type RefillDeps, type RefillOptions } from './refill.js';
