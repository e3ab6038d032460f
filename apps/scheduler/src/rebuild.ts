import { FETCH_HOLD_MARGIN_MS } from '@trawl/config';
import { quietKey, rebuildFrontier, type RebuildOptions, type RebuildReport, type SeenSnapshotLoad, waitForQuietWorkers } from '@trawl/dispatch';
import { restorePauses, restoreRenderOverrides, type Runtime, settingsRecorded } from '@trawl/runtime';
import type { Logger } from '@trawl/telemetry';

/**
 * Loads the newest seen-set snapshot that fits this crawl's filter and `urls` table into the
 * filter (see SeenSnapshots.load). A store that cannot be read is a fallback, not a failure: the
 * rebuild then adds every URL, as it did before snapshots.
 */
export async function loadSeenSnapshot(runtime: Runtime): Promise<SeenSnapshotLoad> {
  const { config } = runtime;
  try {
    const [maxUrlId, urlsTable] = await Promise.all([runtime.db.maxUrlId(), runtime.db.urlsTableId()]);
    const loaded = await runtime.seenSnapshots().load({
      backend: runtime.seen.bloom.backend,
      options: { capacity: config.seen.capacity, errorRate: config.seen.errorRate, shards: config.seen.shards },
      maxUrlId,
      urlsTable,
    });
    if (loaded.refused.length > 0) runtime.logger.warn({ refused: loaded.refused }, 'seen-set snapshots refused');
    return 'fallback' in loaded ? { fallback: loaded.fallback } : { id: loaded.id, coversUrlId: loaded.coversUrlId };
  } catch (error) {
    return { fallback: `the snapshot store could not be read: ${(error as Error).message}` };
  }
}

/**
 * Rebuilds a crawl whose Redis data was lost from PostgreSQL (the frontier, the seen-set's Bloom
 * filter, the policy, the pauses, the namespace settings), on this runtime: what
 * `trawl frontier rebuild` runs, and a scheduler with TRAWL_AUTO_REBUILD.
 */
export async function rebuildFromDatabase(runtime: Runtime, logger: Logger, options: RebuildOptions = {}): Promise<RebuildReport> {
  const { config } = runtime;
  // Hosts are due no sooner than the longest fetch still in flight could end: the loss took every
  // host's gate with it. Workers that noticed the loss abort their fetches and say so; once all
  // of them have, nothing is in flight and the hosts may be due at their delay.
  const longestFetchMs = config.fetch.deadlineMs + FETCH_HOLD_MARGIN_MS;
  let fetchHoldMs = longestFetchMs;
  if (!(await settingsRecorded(runtime.redis, config.namespace))) {
    const quiet = await waitForQuietWorkers(runtime.redis, config.namespace, { heartbeatTtlMs: config.worker.heartbeatMs, maxWaitMs: longestFetchMs, clock: runtime.clock });
    fetchHoldMs = quiet.quiet ? 0 : Math.max(0, longestFetchMs - quiet.waitedMs);
    logger.info({ workers: quiet.workers, quiet: quiet.quiet, waitedMs: quiet.waitedMs }, quiet.quiet ? 'every worker has aborted its fetches: rebuilding' : 'not every worker said it is quiet: hosts wait for the longest fetch');
  }
  const report = await rebuildFrontier(
    {
      redis: runtime.redis,
      namespace: config.namespace,
      db: runtime.db,
      frontier: runtime.frontier,
      bloom: runtime.seen.bloom,
      seenSnapshot: () => loadSeenSnapshot(runtime),
      policyStore: runtime.policyStore,
      config,
      recordSettings: () => runtime.settings.record(),
      markLive: () => runtime.frontier.markLive(),
      restorePauses: () => restorePauses(runtime),
      restoreRenderOverrides: () => restoreRenderOverrides(runtime),
      settingsPresent: () => settingsRecorded(runtime.redis, config.namespace),
      fetchHoldMs,
      clock: runtime.clock,
      logger,
    },
    options,
  );
  await runtime.redis.del(quietKey(config.namespace));
  return report;
}
