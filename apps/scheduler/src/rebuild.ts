import { FETCH_HOLD_MARGIN_MS } from '@trawl/config';
import { rebuildFrontier, type RebuildOptions, type RebuildReport } from '@trawl/dispatch';
import { restorePauses, type Runtime, settingsRecorded } from '@trawl/runtime';
import type { Logger } from '@trawl/telemetry';

/**
 * Rebuilds a crawl whose Redis data was lost from PostgreSQL (the frontier, the seen-set's Bloom
 * filter, the policy, the pauses, the namespace settings), on this runtime: what
 * `trawl frontier rebuild` runs, and a scheduler with TRAWL_AUTO_REBUILD.
 */
export function rebuildFromDatabase(runtime: Runtime, logger: Logger, options: RebuildOptions = {}): Promise<RebuildReport> {
  const { config } = runtime;
  return rebuildFrontier(
    {
      redis: runtime.redis,
      namespace: config.namespace,
      db: runtime.db,
      frontier: runtime.frontier,
      bloom: runtime.seen.bloom,
      policyStore: runtime.policyStore,
      config,
      recordSettings: () => runtime.settings.record(),
      markLive: () => runtime.frontier.markLive(),
      restorePauses: () => restorePauses(runtime),
      settingsPresent: () => settingsRecorded(runtime.redis, config.namespace),
      fetchHoldMs: config.fetch.deadlineMs + FETCH_HOLD_MARGIN_MS,
      clock: runtime.clock,
      logger,
    },
    options,
  );
}
