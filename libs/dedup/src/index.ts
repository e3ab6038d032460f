export {
  DEFAULT_SHINGLE_SIZE,
  hammingDistance,
  MAX_BANDED_DISTANCE,
  normalizeText,
  shingles,
  SIMHASH_BANDS,
  simhash,
  simhashBands,
  type SimHashOptions,
  tokenize,
} from './simhash.js';
export {
  type ClassifyInput,
  classifyDuplicate,
  type DuplicateHandling,
  duplicateHandling,
  type DuplicateKind,
  type DuplicatePolicy,
  type DuplicateVerdict,
  type NearCandidate,
} from './duplicate.js';
