export {
  TestWeb,
  type RenderedLink,
  type TestWebSummary,
} from './testweb.js';
export type { HostHandler, HostHandlerContext, TestWebOptions } from './options.js';
export type { RequestLogEntry } from './log.js';
export {
  analyzeLog,
  type AnalyzeLogOptions,
  type ConcurrencyViolation,
  type DuplicateFetch,
  type HostAnalysis,
  type IntervalViolation,
  type LogAnalysis,
} from './analyze.js';
export {
  analyzeHostile,
  type AnalyzeHostileOptions,
  type HostileCheck,
  type HostileReport,
  type HostileViolation,
  type HostKind,
} from './analyze-hostile.js';
export {
  DEFAULT_CRAWLER_LIMITS,
  HOSTILE_KINDS,
  startHostileWeb,
  type CrawlerLimits,
  type HostileExpectation,
  type HostileKind,
  type HostileWeb,
  type HostileWebOptions,
  type PathLimit,
  type PrivateServer,
} from './hostile.js';
export {
  createWebModel,
  isQueryPage,
  lookupResource,
  pagePath,
  pageSpec,
  reachablePages,
  type BaseHref,
  type Link,
  type LinkAnchor,
  type LinkNoise,
  type PageRef,
  type PageSpec,
  type Resource,
  type WebModel,
  type WebShape,
} from './model.js';
export { hrefOf, renderPage, type OriginOf } from './render.js';
export { requestKey, removeDotSegments } from './request-key.js';
export { hostAddresses } from './address.js';
export { mulberry32 } from './prng.js';
export { TestWebError, TestWebErrorCode } from './errors.js';
