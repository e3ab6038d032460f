export { type FetchJobContext, type FetchJobData, fetchJobDataSchema, fetchQueueName, fetchQueuePrefix, type JobResult } from './job.js';
export { type DeadLetter, FetchQueues, type FetchQueueOptions, FetchWorker, type FetchWorkerOptions } from './queues.js';
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
export { discoverQueues, knownQueues, openQueue, type QueueSpec } from './registry.js';
export { freshLeaseId, freshLeaseRetry, isFetchQueueName } from './retry.js';
