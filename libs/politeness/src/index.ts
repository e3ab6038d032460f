/**
 * The politeness model: how long each host is left alone after a fetch (Crawl-delay, the
 * configured delay, back-off, response times), what a fetch's outcome says about its host, when
 * a failed URL is tried again, and Retry-After. Everything here is pure: the crawl pipeline
 * measures, calls these, and stores what they return.
 */
export {
  baseDelayMs,
  DEFAULT_POLITENESS,
  type DelayInput,
  hostDelayMs,
  type PolitenessOptions,
  rememberResponseMs,
  responseSignalMs,
  responseTimeMs,
} from './delay.js';
export { type FetchOutcomeKind, HEALTHY, type HostHealth, nextHealth, outcomeOfError, outcomeOfStatus } from './health.js';
export { attemptsFor, DEFAULT_RETRY, type RetryDecision, retryDecision, type RetryPolicy, type TransientFailure, urlRetryDelayMs } from './retry.js';
export { nextDueAt, parseRetryAfter } from './due.js';
export { type DelayExplanation, type DelayReason, explainDelay } from './explain.js';
export {
  BODY_SCAN_BYTES,
  type BlockOptions,
  type BlockSignal,
  type BlockSignalKind,
  blockSignalOfFailure,
  blockSignalOfResponse,
  type BlockState,
  type BlockVerdict,
  DEFAULT_BLOCK_BODY_MARKERS,
  DEFAULT_BLOCK_THRESHOLD,
  DEFAULT_BLOCK_URL_MARKERS,
  nextBlockState,
  RESET_AT_ONCE_MS,
} from './block.js';
