export { type RobotsCacheOptions, RobotsCache, type RobotsLookup } from './cache.js';
export { type RobotsRule } from './match.js';
export { originOf, robotsUrlFor } from './origin.js';
export { agentToken, parseRobots, type RobotsRules } from './parse.js';
export { type UsagePreference } from './usage.js';
export {
  decide,
  entryFromFetch,
  needsFetch,
  refusalOf,
  type RobotsRefusal,
  ROBOTS_MAX_TTL_MS,
  SERVER_ERROR_RETRY_MS,
  type RobotsDecision,
  type RobotsEntry,
  type RobotsFetchOutcome,
  type RobotsOptions,
} from './policy.js';
export { readEntry, robotsEntrySchema } from './schema.js';
export { matchForm, ROBOTS_MAX_BYTES, robotsText } from './text.js';
