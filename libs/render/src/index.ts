// The port, the policy and the classifier: nothing here loads a browser (see ./chromium).
export {
  type BeforeRequest,
  type FetchedResponse,
  type RenderFetch,
  type Renderer,
  type RenderOptions,
  type RenderResult,
  type RenderTimings,
  type RequestDecision,
  type RequestOutcome,
  type ResourceType,
  type SsrfCheck,
  type SubrequestInfo,
  type SubrequestRecord,
  type SubresourceCache,
} from './types.js';
export { RenderErrorCode, renderError, RequestRefused } from './errors.js';
export {
  type ClassifierSettings,
  DEFAULT_CLASSIFIER_SETTINGS,
  needsRendering,
  pageSignals,
  type PageSignals,
  type RenderClassification,
  type RenderReason,
} from './classify.js';
export {
  compareYields,
  claimSample,
  type Comparison,
  DEFAULT_LEARNER_SETTINGS,
  freshHostState,
  type HostRenderState,
  type HostVerdict,
  type HostVerdictStore,
  type LearnerDecision,
  MemoryHostVerdicts,
  type PageYield,
  recordSample,
  releaseSample,
  RenderLearner,
  type RenderLearnerSettings,
  type SampleRules,
  standingState,
} from './learner.js';
export { cacheable, DEFAULT_REQUEST_POLICY, refusedBy, type RequestFacts, type RequestPolicySettings } from './policy.js';
export { type MemoryCacheOptions, MemorySubresourceCache } from './cache.js';
export { type ResolveAll, ssrfCheckFrom } from './ssrf.js';
export { LazyRenderer } from './lazy.js';
export { type ChromiumSettings, renderSettingsFrom, type RenderSettings } from './settings.js';
