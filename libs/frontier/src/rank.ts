/**
 * Host ranking among ready hosts (Mercator's front queues, across hosts): which of the hosts that
 * may be fetched now gets a free fetch slot first. Pure; `claimReady` (lua/claimReady-6.lua)
 * applies the same arithmetic inside Redis, and `rank.test.ts` and the frontier tests keep the
 * two in step.
 */

/** In-links from this many distinct hosts give a host the full authority of 1. */
export const AUTHORITY_SATURATION = 1024;

/**
 * Hosts one claim ranks at most, whatever the window: ranking is done inside Redis, which serves
 * nothing else meanwhile (2,048 hosts ≈ 10–30 ms on a loaded 2-core machine; docs/priority.md).
 */
export const MAX_RANKED_HOSTS = 2048;

/** The earliest-due hosts a claim of `limit` looks at: `limit × window`, at most `MAX_RANKED_HOSTS` (never fewer than `limit`). */
export function rankedHosts(limit: number, window: number): number {
  return Math.max(limit, Math.min(limit * Math.max(1, window), MAX_RANKED_HOSTS));
}

/** How a host's score is made and how far it may move the host ahead of the hosts due before it. */
export interface HostRankOptions {
  /**
   * How far ahead of its due-time order a host of score 1 goes (ms); score s goes s × this.
   * 0: hosts are served by due time alone.
   */
  leadMs: number;
  /** Hosts looked at per claim: this many times the claim's limit (see `rankedHosts`), the earliest-due first. */
  window: number;
  /** Weights of the score's parts (any scale: they are normalized by their sum). */
  weights: { authority: number; seed: number };
}

/** What a host's score is made of. */
export interface HostScoreParts {
  /** Distinct hosts seen linking to it (a HyperLogLog estimate). */
  inLinkHosts: number;
  /** The highest priority any of its seeds was given (0..1; 0 when it has none). */
  seedPriority: number;
}

export const NO_HOST_RANK: HostRankOptions = { leadMs: 0, window: 1, weights: { authority: 0, seed: 0 } };

/** 0..1: log-scaled, so the first few linking hosts count most, and full at `AUTHORITY_SATURATION`. */
export function authorityOf(inLinkHosts: number): number {
  if (!(inLinkHosts > 0)) return 0;
  return Math.min(1, Math.log2(1 + inLinkHosts) / Math.log2(1 + AUTHORITY_SATURATION));
}

/** 0..1: the weighted mean of the host's authority and its seeds' priority. */
export function hostScore(parts: HostScoreParts, weights: HostRankOptions['weights']): number {
  const total = weights.authority + weights.seed;
  if (!(total > 0)) return 0;
  const seed = Math.min(1, Math.max(0, parts.seedPriority));
  return (weights.authority * authorityOf(parts.inLinkHosts) + weights.seed * seed) / total;
}

/**
 * The order in which ready hosts are claimed, lowest first: a host due already ranks at its due
 * time less its score's lead, so its wait past due counts one for one against other hosts' score
 * and no host starves (a host that has waited `leadMs` past due is ahead of every host that has
 * just come due, whatever their scores). A host not yet due (inside the dispatch lead) ranks at
 * its due time, behind every host that is due.
 */
export function claimRank(dueAt: number, now: number, score: number, leadMs: number): number {
  return dueAt > now ? dueAt : dueAt - score * leadMs;
}
