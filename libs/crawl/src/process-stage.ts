/**
 * The process stage alone (`@trawl/crawl/process`): what records a fetched page, and nothing of
 * the fetch stage. A process stage that imports only this loads no HTTP client and no BullMQ —
 * each is a tenth of a second or more of CPU at every start of a process thread or a
 * process-only worker.
 */
export type { CrawlWorkerDeps, PipelineDeps } from './deps.js';
export { closePipeline, type SharedPipeline } from './close-pipeline.js';
export { RecentBodies } from './bodies.js';
export { Acks, Records, UrlStates, Validators } from './records.js';
export { type EntryOutcome, type ProcessDeps, processEntry } from './process/process-entry.js';
export { ProcessWorker, type ProcessWorkerOptions } from './process/process-worker.js';
export { ThreadAnalyzer } from './process/analyzer.js';
export { CrawlArchive } from './process/archive.js';
export { Duplicates } from './process/duplicates.js';
export { canonicalSitemapUrls } from './process/sitemap-step.js';
