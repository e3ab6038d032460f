/**
 * When to fetch a page again: a change-rate estimate built for censored visit histories
 * (./estimator.ts), the schedule that follows it (./policy.ts), how urgent a due page is
 * (./priority.ts), and the mapping from an HTTP outcome to what a visit observed
 * (./observation.ts). Everything here is pure.
 */
export { addVisit, type ChangeStats, changeIntervalS, changeRate, MAX_CHANGE_INTERVAL_S, NO_STATS } from './estimator.js';
export { observationOf, type VisitOutcome } from './observation.js';
export {
  DEFAULT_RECRAWL,
  isDue,
  type Observation,
  planRecrawl,
  type RecrawlOptions,
  recrawlOptions,
  type RecrawlPlan,
  type RecrawlState,
} from './policy.js';
export { DEFAULT_PRIORITY, type PriorityInput, type PriorityOptions, recrawlPriority } from './priority.js';
