import type { Clock } from '@trawl/core';
import type { Counters } from '@trawl/model';
import { type Database, takeDuePages } from '@trawl/db';
import { type Frontier, UrlFlag } from '@trawl/frontier';
import { recrawlPriority } from '@trawl/recrawl';
import type { Logger } from '@trawl/telemetry';

/** Re-crawls go in the top quarter of priorities, above new discoveries. */
export const RECRAWL_PRIORITY_FLOOR = 0.75;

export interface RecrawlSweepDeps {
  db: Pick<Database, 'pool' | 'options' | 'markQueued' | 'markSpilled'>;
  frontier: Pick<Frontier, 'push'>;
  counters: Pick<Counters, 'add'>;
  clock: Clock;
  logger: Logger;
}

/**
 * One re-crawl sweep: pages due (their `next_crawl_at` has passed, or they have gone unvisited for
 * `maxIntervalS`, see `takeDuePages`) go back into the frontier, past the
 * seen-set, flagged as re-crawls (so the worker sends its conditional GET) and in the top band,
 * ahead of new discoveries of their hosts. At most `perHost` per host are out at a time, so a
 * host with a flood of due pages cannot crowd the others out of a sweep.
 */
export async function recrawlSweep(deps: RecrawlSweepDeps, options: { batch: number; perHost: number; maxIntervalS: number }): Promise<{ pushed: number }> {
  const pages = await takeDuePages(deps.db.pool, deps.db.options.schema, { limit: options.batch, perHost: options.perHost, maxIntervalS: options.maxIntervalS });
  if (pages.length === 0) return { pushed: 0 };
  const now = deps.clock.now();
  const result = await deps.frontier.push(
    pages.map((page) => ({
      url: page.url,
      host: page.host,
      depth: page.depth,
      hops: 0,
      flags: UrlFlag.Recrawl,
      // The top quarter of priorities: above new discoveries (level with seeds), the more urgent
      // the higher where there are more bands.
      priority: RECRAWL_PRIORITY_FLOOR + (1 - RECRAWL_PRIORITY_FLOOR) * recrawlPriority({ changeIntervalS: page.changeFrequencyS, checkedAt: page.checkedAt, failures: page.failures }, now),
    })),
    // Re-crawls are not new URLs: the per-host budget and the query-variant cap count discoveries.
    // Past TRAWL_FRONTIER_REDIS_MAX_URLS they wait in PostgreSQL like discoveries.
    { maxUrlsPerHost: 0, maxQueryVariants: 0, spill: true },
  );
  const spilled = new Set(result.spills.map((s) => s.index));
  await Promise.all([
    deps.db.markQueued(pages.filter((_, i) => !spilled.has(i)).map((p) => p.hash)),
    deps.db.markSpilled(result.spills.map((s) => ({ hash: (pages[s.index] as { hash: Buffer }).hash, band: s.band, entry: s.entry }))),
  ]);
  deps.counters.add('recrawlsQueued', result.pushed);
  deps.logger.info({ pushed: result.pushed }, 're-crawl sweep');
  return { pushed: result.pushed };
}
