import { decide, needsFetch, originOf, type RobotsCache, type RobotsEntry, type RobotsRefusal, refusalOf } from '@trawl/robots';
import type { ResolvedPolicy } from './policy.js';

/**
 * Per URL, whether the robots.txt already cached for its origin refuses it (nothing is fetched
 * here): a refused URL is settled without a turn at its host. Null: allowed, robots.txt not
 * obeyed, or no fresh copy cached (the fetch stage fetches it under the host's token).
 */
export async function cachedRefusals(
  deps: { cache: Pick<RobotsCache, 'get'>; now: () => number },
  policy: ResolvedPolicy,
  urls: readonly string[],
): Promise<(RobotsRefusal | null)[]> {
  if (!policy.policy.robots.obey) return urls.map(() => null);
  const origins = urls.map((url) => {
    try {
      return originOf(url);
    } catch {
      return null;
    }
  });
  // One lookup per distinct origin, all at once (mostly answered by the in-process cache).
  const distinct = [...new Set(origins.filter((o): o is string => o !== null))];
  const entries = new Map(await Promise.all(distinct.map(async (origin) => [origin, await deps.cache.get(origin)] as const)));
  const now = deps.now();
  return urls.map((url, i) => {
    const origin = origins[i];
    const entry = origin ? (entries.get(origin) ?? null) : null;
    if (entry === null || needsFetch(entry, now)) return null;
    return refusalOf(decide(entry as RobotsEntry, url, now, policy.robots));
  });
}
