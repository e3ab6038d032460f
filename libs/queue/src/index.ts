export {
  decodeFetchJob,
  encodeFetchJob,
  type FetchJob,
  type FetchJobContext,
  type FetchJobData,
  fetchJobDataSchema,
  fetchQueueName,
  fetchQueuePrefix,
  type JobResult,
} from './job.js';
export {
  DEAD_LETTER_MAX_AGE_S,
  type DeadLetter,
  DEFAULT_DEAD_LETTER_MAX,
  FetchQueues,
  type FetchQueueOptions,
  fetchJobOptions,
  FetchWorker,
  type FetchWorkerOptions,
  forgetHeldFetchJobs,
  heldFetchJobs,
} from './queues.js';
export { type ReadyJob, ReadyJobs, readyKeys } from './ready.js';
export {
  describeIssues,
  SEEDS_QUEUE,
  type SeedsJobData,
  seedsJobSchema,
  type SeedsJobResult,
  SeedsQueue,
  seedsQueuePrefix,
  SeedsRejected,
  SeedsWorker,
} from './seeds.js';
export { SWEEPS_QUEUE, type SweepName, SweepsQueue, sweepsQueuePrefix, SweepsWorker } from './sweeps.js';
export { discoverQueues, knownQueues, openQueue, type QueueSpec } from './registry.js';
export { freshLeaseId, freshLeaseRetry, isFetchQueueName } from './retry.js';
export {
  decodeRenderJob,
  encodeRenderJob,
  RENDER_QUEUE,
  type RenderDelivery,
  type RenderJob,
  type RenderJobData,
  renderJobDataSchema,
  RenderQueue,
  renderQueuePrefix,
  RenderLater,
  RenderWorker,
  type RenderWorkerOptions,
  RenderWorkers,
  renderWorkersKey,
} from './render.js';
