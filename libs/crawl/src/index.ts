export { type CounterListener, type CounterName, Counters, COUNTERS, type CounterValues } from './counters.js';
export { type Candidate, candidatesFromLinks, Discovery, type DiscoveryResult, PRIORITY, seedCandidate } from './discovery.js';
export { failOutcome, outcomeRecord, skipOutcome } from './failure.js';
export { applyOutcome, HostHold, type HostRelease, type JobOutcome } from './outcome.js';
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
} from './policy.js';
export { inlineAnalyzer, type PageAnalyzer, ThreadAnalyzer } from './analyzer.js';
export { analyzePage, type PageAnalysis, type PageAnalysisInput } from './analyze.js';
export { type PipelineDeps, processFetchJob } from './process.js';
export { Acks, type FetchRecord, Records, UrlStates, Validators } from './records.js';
export { classifyStatus, errorAction, type StatusClass } from './retry.js';
export { CrawlWorker, type CrawlWorkerDeps, type CrawlWorkerOptions, createDiscovery, type DiscoveryParts } from './worker.js';
export { type ArchivedPage, CrawlArchive } from './archive.js';
export { type Capture, type DuplicateAnswer, type DuplicateIndex, type DuplicateQuery, Duplicates, type DuplicatesOptions } from './duplicates.js';
export { canonicalSitemapUrls, handleSitemap, type SitemapDeps } from './sitemap-step.js';
