import { FETCH_HOLD_MARGIN_MS } from '@trawl/config';
import { quietKey, rebuildFrontier, type RebuildOptions, type RebuildReport, waitForQuietWorkers } from '@trawl/dispatch';
import { restorePauses, type Runtime, settingsRecorded } from '@trawl/runtime';
import type { Logger } from '@trawl/telemetry';

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
      policyStore: runtime.policyStore,
      config,
      recordSettings: () => runtime.settings.record(),
      markLive: () => runtime.frontier.markLive(),
      restorePauses: () => restorePauses(runtime),
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
