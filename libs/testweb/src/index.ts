export {
  TestWeb,
  type GroundTruth,
  type RenderedLink,
  type ResolvedPage,
  type TestWebSummary,
} from './testweb.js';
export type { DuplicateOptions, FileLinkOptions, HostHandler, HostHandlerContext, TestWebOptions } from './options.js';
export type { RequestLogEntry, ResourceKind } from './log.js';
export { httpDate, notModified, type ChangeClass, type ChangeOptions, type ConditionalHeaders, type PageVersion } from './changes.js';
export type { SitemapFormat, SitemapOptions } from './sitemap.js';
export { FILE_KINDS, FILE_TYPES, type FileKind } from './files.js';
export { duplicateClusters, type DuplicateInfo } from './duplicates.js';
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
  POISON_KINDS,
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
  contentHost,
  createWebModel,
  filePath,
  isQueryPage,
  lookupResource,
  pagePath,
  pagesOf,
  pageSpec,
  reachablePages,
  VARIANT_KINDS,
  variantPath,
  walkWeb,
  type FileShape,
  type VariantKind,
  type VariantShape,
  type WalkItem,
  type BaseHref,
  type Link,
  type LinkAnchor,
  type LinkNoise,
  type LinkLayout,
  type LinkRegion,
  type PageRef,
  type PageSpec,
  type Resource,
  type WebModel,
  type WebShape,
} from './model.js';
export { hrefOf, renderPage, renderVariant, type OriginOf, type RenderOptions } from './render.js';
export { requestKey, removeDotSegments } from './request-key.js';
export { hostAddresses } from './address.js';
export { mulberry32 } from './prng.js';
export {
  describeProfile,
  hostLatencyMs,
  pageLinkCount,
  pageSizeBytes,
  PageProfileSchema,
  parsePageProfile,
  REALISTIC_PROFILE,
  realisticProfile,
  type PageProfile,
} from './profile.js';
export { paragraphPool, renderRealisticPage, SITE_SCRIPT, SITE_SCRIPT_PATH } from './realistic.js';
export { TestWebError, TestWebErrorCode } from './errors.js';
export { crossScriptedHost, type CrossScriptedHostOptions, scriptOnlyPath } from './cross-scripted.js';
export { SCRIPTED_KINDS, scriptedHost, type ScriptedHostOptions, type ScriptedKind, scriptedNeedsRender, scriptedPageUrls, scriptedPath } from './scripted.js';
