export { type CounterName, Counters, COUNTERS, type CounterValues } from './counters.js';
export { addSeeds, type CrawlSummary, type Progress, runCrawl, type RunCrawlOptions, wipeNamespace } from './crawl.js';
export { type Candidate, candidatesFromLinks, Discovery, type DiscoveryResult, seedCandidate } from './discovery.js';
export { Dispatcher, type DispatcherOptions, jobDataOf } from './dispatcher.js';
export {
  type CrawlPolicy,
  crawlPolicySchema,
  PolicyFollower,
  policyFromConfig,
  PolicyStore,
  type ResolvedPolicy,
  resolvePolicy,
  withSeeds,
} from './policy.js';
export { type PipelineDeps, processFetchJob } from './process.js';
export { Acks, Records } from './records.js';
export { classifyStatus, errorAction, retryDelayMs, type StatusClass } from './retry.js';
export { Runtime, type RuntimeOptions } from './runtime.js';
export { CrawlWorker, type CrawlWorkerOptions, createDiscovery } from './worker.js';
export { LOCAL_POSTGRES_URL, LOCAL_REDIS_URL, resolveServices, type Services } from './services.js';
export { runWorkerProcess, type WorkerProcessReport } from './worker-process.js';
