export {
  DEFAULT_NORMALIZE_OPTIONS,
  type NormalizeErrorCode,
  type NormalizeOptions,
  type NormalizeResult,
  type NormalizedLink,
  normalizeLink,
  normalizeUrl,
} from './normalize.js';
export { DEFAULT_STRIP_PARAMS } from './strip.js';
export { fingerprint, fingerprintHex } from './fingerprint.js';
export { hostOf, registrableDomain } from './host.js';
export { hostInScope, inScope, type Scope, type ScopeMode, scopeFromSeeds } from './scope.js';
export { DEFAULT_TRAP_OPTIONS, type TrapOptions, type TrapReason, trapReason, DATE_VARIANT_PREFIX, isDateVariant, variantKey } from './traps.js';
export { DEFAULT_SKIP_EXTENSIONS, extensionSet, ignoredExtension, ignoredPathExtension } from './extensions.js';
