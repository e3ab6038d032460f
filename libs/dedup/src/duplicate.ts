import { hammingDistance } from './simhash.js';

export type DuplicateKind = 'exact' | 'near';

/** A page already in the near-duplicate index whose fingerprint shares a band with ours. */
export interface NearCandidate {
  urlHash: Buffer;
  simhash: bigint;
  /** When it entered the index (epoch ms): among equals, the earliest page is the cluster's first. */
  indexedAt: number;
}

export interface DuplicateVerdict {
  kind: DuplicateKind;
  /** The first page of the cluster (its url_hash), recorded as `crawled_pages.duplicate_of`. */
  of: Buffer;
  /** Bits between the fingerprints; 0 for an exact duplicate. */
  distance: number;
}

export interface ClassifyInput {
  urlHash: Buffer;
  simhash: bigint | null;
  /** The first page recorded with the same body (sha256), if any: from the content-hash lookup. */
  exactOf: Buffer | null;
  /** Band matches from the index (any distance: this function checks it). */
  candidates: readonly NearCandidate[];
  /** TRAWL_NEAR_DUP_DISTANCE. */
  maxDistance: number;
}

/**
 * Is this page a duplicate, and of which page? An identical body (same sha256) makes it an exact
 * duplicate of the first page that had that body; otherwise the nearest indexed fingerprint
 * within `maxDistance` bits makes it a near-duplicate (ties: the earliest indexed, then the
 * lowest url_hash, so every worker picks the same page). A page never duplicates itself (a
 * re-crawl finds its own earlier row). Only pages that are no one's duplicate are indexed, so
 * `of` is always the first page of its cluster and clusters do not drift by chaining.
 */
export function classifyDuplicate(input: ClassifyInput): DuplicateVerdict | null {
  const { urlHash, simhash, exactOf, candidates, maxDistance } = input;
  if (exactOf !== null && !exactOf.equals(urlHash)) return { kind: 'exact', of: exactOf, distance: 0 };
  if (simhash === null) return null;
  let best: { candidate: NearCandidate; distance: number } | null = null;
  for (const candidate of candidates) {
    if (candidate.urlHash.equals(urlHash)) continue;
    const distance = hammingDistance(simhash, candidate.simhash);
    if (distance > maxDistance) continue;
    if (best === null || isBetter(candidate, distance, best.candidate, best.distance)) best = { candidate, distance };
  }
  return best === null ? null : { kind: 'near', of: best.candidate.urlHash, distance: best.distance };
}

function isBetter(a: NearCandidate, da: number, b: NearCandidate, db: number): boolean {
  if (da !== db) return da < db;
  if (a.indexedAt !== b.indexedAt) return a.indexedAt < b.indexedAt;
  return Buffer.compare(a.urlHash, b.urlHash) < 0;
}

export interface DuplicatePolicy {
  /** TRAWL_NEAR_DUP_STORE_BODY */
  nearDupStoreBody: boolean;
  /** TRAWL_NEAR_DUP_FOLLOW_LINKS */
  nearDupFollowLinks: boolean;
}

export interface DuplicateHandling {
  /** Keep the body in the content store (and its storage_key on the page). */
  storeBody: boolean;
  /** Queue the page's links. */
  followLinks: boolean;
  /** Add the page's fingerprint to the index: only the first page of a cluster is indexed. */
  index: boolean;
}

/**
 * What the crawl does with a page given its verdict. An exact duplicate's body is stored anyway:
 * the content store already holds those bytes, so it costs nothing and the page keeps its
 * storage_key. Link following applies to both kinds (an exact duplicate is the closest
 * near-duplicate there is).
 */
export function duplicateHandling(verdict: DuplicateVerdict | null, policy: DuplicatePolicy): DuplicateHandling {
  if (verdict === null) return { storeBody: true, followLinks: true, index: true };
  return {
    storeBody: verdict.kind === 'exact' || policy.nearDupStoreBody,
    followLinks: policy.nearDupFollowLinks,
    index: false,
  };
}

/** Whether a page's links are followed whatever its verdict, so they need not wait for it. */
export const followsLinksWhateverTheVerdict = (policy: DuplicatePolicy): boolean => policy.nearDupFollowLinks;

export interface BatchPage {
  urlHash: Buffer;
  simhash: bigint | null;
  /** sha256 of the body; null without one. */
  contentHash: string | null;
}

export interface BatchLookups {
  /** First page recorded with each body hash (NearDupIndex.firstWithContent's answer fits). */
  firstWithContent: ReadonlyMap<string, { urlHash: Buffer }>;
  /** Band matches per page, in page order (NearDupIndex.findNearMany). */
  candidates: readonly (readonly NearCandidate[])[];
}

/**
 * `classifyDuplicate` for a batch of pages looked up together: a page that comes earlier in the
 * batch and is nobody's duplicate counts as already recorded for the pages after it, so two
 * copies fetched at the same moment are still recognized (the later one as the duplicate).
 * `now` stamps those in-batch pages as candidates.
 */
export function classifyBatch(pages: readonly BatchPage[], lookups: BatchLookups, maxDistance: number, now: number): (DuplicateVerdict | null)[] {
  const firstWithContent = new Map<string, Buffer>();
  for (const [contentHash, first] of lookups.firstWithContent) firstWithContent.set(contentHash, first.urlHash);
  const heads: NearCandidate[] = [];
  return pages.map((page, i) => {
    const verdict = classifyDuplicate({
      urlHash: page.urlHash,
      simhash: page.simhash,
      exactOf: page.contentHash === null ? null : (firstWithContent.get(page.contentHash) ?? null),
      candidates: [...(lookups.candidates[i] ?? []), ...heads],
      maxDistance,
    });
    // As in the database's lookup, the first page with a body is any page that is not itself an
    // exact duplicate: a near-duplicate's later byte-identical copies are exact duplicates of it.
    if (verdict?.kind !== 'exact' && page.contentHash !== null && !firstWithContent.has(page.contentHash)) firstWithContent.set(page.contentHash, page.urlHash);
    if (verdict === null && page.simhash !== null) heads.push({ urlHash: page.urlHash, simhash: page.simhash, indexedAt: now });
    return verdict;
  });
}
