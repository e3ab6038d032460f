export { type Clock, ManualClock, OffsetClock, systemClock } from './clock.js';
export {
  describeError,
  type ErrorAction,
  ErrorCode,
  isTrawlError,
  TrawlError,
  type TrawlErrorOptions,
} from './errors.js';
export { Batcher, type BatcherOptions, PROCESS_BATCH_WAIT_MS, URGENT_BATCH_WAIT_MS } from './batcher.js';
export { classifyStatus, isTransientStatus, type StatusClass } from './http-status.js';
export { jitter, sleep } from './time.js';
export { bearerToken, tokenId, TokenSet } from './tokens.js';
export { ThreadCalls, type ThreadCallsOptions, type ThreadReply } from './thread-calls.js';
export { lowerPriorityCode, lowerThreadPriority, nameThreadCode, profilingArgs, siblingModule, startModuleThread } from './module-thread.js';
