export { Dispatcher, type DispatcherDeps, type DispatcherOptions, jobDataOf } from './dispatcher.js';
export { Membership, preferredOwners } from './membership.js';
export { PartitionOwnership } from './ownership.js';
export { policyDifferences, publishConfigPolicy } from './publish.js';
export { Scheduler, type SchedulerDeps, type SchedulerOptions, schedulerStatus } from './scheduler.js';
export { addSeeds, prepareSeeds, type SeedsDeps, type SeedsReport, widenScope } from './seeds.js';
export { RECRAWL_PRIORITY_FLOOR, recrawlSweep, type RecrawlSweepDeps } from './recrawl.js';
export { sitemapSweep } from './sitemaps.js';
export { rebuildFrontier, type RebuildDeps, rebuildKey, type RebuildOptions, type RebuildProgress, type RebuildReport, restoreItemOf } from './rebuild.js';
