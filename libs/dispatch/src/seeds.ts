import { type Candidate, type CrawlPolicy, type Discovery, type PolicyStore, resolvePolicy, seedCandidate, withSeeds } from '@trawl/model';
import type { SeedsJobData, SeedsJobResult } from '@trawl/queue';
import { SeedsRejected } from '@trawl/queue';

export interface SeedsDeps {
  policyStore: Pick<PolicyStore, 'load' | 'update'>;
  discovery: Pick<Discovery, 'add'>;
  /** The policy to start from when none is published yet (this process's configuration). */
  basePolicy: () => CrawlPolicy;
}

export interface SeedsReport extends SeedsJobResult {
  given: number;
  /** Seeds that are not crawlable URLs, with the reason (never queued). */
  invalid: string[];
  policy: CrawlPolicy;
}

/** Normalizes every seed first; the request is all valid or it is refused whole. */
export function prepareSeeds(request: SeedsJobData, policy: CrawlPolicy): { candidates: Candidate[]; invalid: string[] } {
  const resolved = resolvePolicy(policy);
  const candidates: Candidate[] = [];
  const invalid: string[] = [];
  request.urls.forEach((raw, i) => {
    const candidate = seedCandidate(raw, resolved);
    if ('error' in candidate) invalid.push(`urls.${i}: ${JSON.stringify(raw.length > 200 ? `${raw.slice(0, 200)}…` : raw)} ${candidate.error}`);
    else candidates.push({ ...candidate, priority: request.priority ?? candidate.priority, maxDepth: request.max_depth ?? null });
  });
  return { candidates, invalid };
}

/** Seeds handed to discovery at once. */
const SEED_BATCH = 500;

/**
 * Queues seeds through the normal path (normalization, scope, robots.txt, seen-set), widening
 * the published crawl policy's scope to them first. With `partial: false` (a seeds job, the
 * REST API) one invalid URL refuses the whole request before anything is applied; with
 * `partial: true` (`trawl crawl URL…`) invalid seeds are reported and the rest queued.
 */
export async function addSeeds(deps: SeedsDeps, request: SeedsJobData, options: { partial?: boolean } = {}): Promise<SeedsReport> {
  const current = (await deps.policyStore.load()) ?? deps.basePolicy();
  const { candidates, invalid } = prepareSeeds(request, current);
  if (invalid.length > 0 && !options.partial) throw new SeedsRejected(invalid);
  const urls = candidates.map((c) => c.url);
  const policy = await deps.policyStore.update((stored) => widenScope(stored ?? deps.basePolicy(), urls, request.scope));
  // In batches, yielding between them: a large request never holds the event loop (and every
  // other request of the process, /healthz included) for its whole length.
  const result = { queued: 0, known: 0 };
  for (let start = 0; start < candidates.length; start += SEED_BATCH) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    const batch = await deps.discovery.add(candidates.slice(start, start + SEED_BATCH));
    result.queued += batch.queued;
    result.known += batch.known;
  }
  return { given: request.urls.length, enqueued: result.queued, already_seen: result.known, invalid, policy };
}

/** The policy with these seeds in scope, the way the request asks (default: the crawl's own mode). */
export function widenScope(policy: CrawlPolicy, urls: readonly string[], mode?: 'host' | 'domain' | 'any'): CrawlPolicy {
  return withSeeds(policy, urls, mode);
}
