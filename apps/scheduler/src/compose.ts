import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ErrorCode } from '@trawl/core';
import { FrontierRefill, policyFromConfig } from '@trawl/model';
import { Freshness } from '@trawl/db';
import { addSeeds, Dispatcher, publishConfigPolicy, recrawlSweep, Scheduler, SeedsAdmission, sitemapSweep } from '@trawl/dispatch';
import { type SweepName, SeedsWorker, SweepsQueue, SweepsWorker } from '@trawl/queue';
import { restorePauses, restoreRenderOverrides, type Runtime } from '@trawl/runtime';
import { rebuildFromDatabase } from './rebuild.js';

export interface SchedulerService {
  scheduler: Scheduler;
  dispatcher: Dispatcher;
  /** Pauses and resumes this scheduler's seeds consumer with seed admission. */
  admission: SeedsAdmission;
  stop(): Promise<void>;
}

/** How often a scheduler looks at the frontier's queued count to pause or resume the seeds queue. */
const ADMISSION_CHECK_MS = 1000;

/** The refill of a frontier that spills past TRAWL_FRONTIER_REDIS_MAX_URLS, for the dispatcher. */
function refillOf(runtime: Runtime): (partition: number) => Promise<number> {
  const refill = new FrontierRefill({ db: runtime.db, frontier: runtime.frontier, logger: runtime.logger.child({ component: 'refill' }) });
  return (partition) => refill.run(partition);
}

/** A member id that tells an operator which process it is. */
export const memberIdFor = (role: string): string => `${role}@${hostname()}:${process.pid}:${randomUUID().slice(0, 6)}`;

/**
 * The scheduler's object graph on a runtime: publishes the configured crawl policy, dispatches
 * the partitions it owns, consumes the `seeds` queue. `pagesBaseline` is where a max-pages limit
 * starts counting (`trawl crawl` passes the count at its start).
 */
export async function startSchedulerService(runtime: Runtime, options: { memberId?: string; pagesBaseline?: number } = {}): Promise<SchedulerService> {
  const { config, logger } = runtime;
  await publishConfigPolicy(runtime.policyStore, config, {
    pagesBaseline: options.pagesBaseline ?? (await runtime.frontier.stats()).done,
    logger: logger.child({ component: 'policy' }),
  });
  // Operator pauses and rendering overrides outlive Redis: restore them from PostgreSQL before
  // dispatching anything.
  await restorePauses(runtime);
  await restoreRenderOverrides(runtime);
  const discovery = runtime.discovery();
  const dispatcher = new Dispatcher(
    {
      frontier: runtime.frontier,
      queues: runtime.queues,
      policy: runtime.policy,
      clock: runtime.clock,
      logger: logger.child({ component: 'dispatcher' }),
      ...(runtime.frontier.spills ? { refill: refillOf(runtime) } : {}),
    },
    { window: config.dispatch.window, pollMs: 25, leadMs: config.dispatch.leadMs, backlogMax: config.process.backlogMax },
  );
  const sweepsQueue = new SweepsQueue(runtime.queueRedis, config.namespace);
  const scheduler = new Scheduler(
    {
      redis: runtime.redis,
      namespace: config.namespace,
      partitions: config.partitions,
      dispatcher,
      discovery,
      clock: runtime.clock,
      logger: logger.child({ component: 'scheduler' }),
      // Redis lost the crawl: dispatch nothing until `trawl frontier rebuild` has restored it,
      // then publish this process's policy and sweeps again (they were lost with it).
      guard: () => runtime.intact(),
      onRestored: async () => {
        await restorePauses(runtime);
        await restoreRenderOverrides(runtime);
        await publishConfigPolicy(runtime.policyStore, config, { pagesBaseline: (await runtime.frontier.stats()).done, logger: logger.child({ component: 'policy' }) });
        await scheduleSweeps(sweepsQueue, config);
      },
      ...(config.scheduler.autoRebuild
        ? {
            rebuild: async () => {
              const report = await rebuildFromDatabase(runtime, logger.child({ component: 'rebuild' }));
              logger.warn({ rows: report.rows, queued: report.queued, durationMs: report.durationMs }, 'the crawl\'s Redis data was rebuilt from PostgreSQL (TRAWL_AUTO_REBUILD)');
            },
          }
        : {}),
    },
    {
      memberId: options.memberId ?? memberIdFor('scheduler'),
      leaseMs: config.scheduler.leaseMs,
      repairEveryMs: config.scheduler.repairEveryMs,
      repairOlderThanMs: 2 * config.worker.leaseMs,
    },
  );
  const seeds = new SeedsWorker(
    runtime.blockingRedis(),
    config.namespace,
    async (data) => {
      const intact = await runtime.intact();
      if (!intact.ok) throw new Error(`${ErrorCode.NamespaceWiped}: ${intact.message}`);
      const report = await addSeeds({ policyStore: runtime.policyStore, discovery, basePolicy: () => policyFromConfig(config, []) }, data);
      await runtime.counters.flush();
      logger.info({ given: report.given, enqueued: report.enqueued, already_seen: report.already_seen }, 'seeds added');
      return { enqueued: report.enqueued, already_seen: report.already_seen };
    },
    (error) => logger.error({ err: error }, 'seeds queue error'),
    { admit: async () => (await runtime.admission.check({ setsThreshold: true })).state === 'admitting' },
  );
  // Seed admission: the seeds queue is consumed only while the frontier holds less than the
  // crawl can fetch (TRAWL_FRONTIER_MAX_QUEUED); above it seeds wait, and this resumes them.
  const admission = new SeedsAdmission({ check: () => runtime.admission.check({ setsThreshold: true }), seeds, logger: logger.child({ component: 'admission' }) }, { everyMs: ADMISSION_CHECK_MS });
  const sweeps = new SweepsWorker(runtime.blockingRedis(), config.namespace, (name) => runSweep(runtime, name), (error) => logger.error({ err: error }, 'sweeps queue error'));
  // Dispatch first: the sweeps' schedules are a few round trips nobody's first fetch should wait for.
  await scheduler.start();
  await scheduleSweeps(sweepsQueue, config);
  const seedsRunning = seeds.run();
  const sweepsRunning = sweeps.run();
  await seeds.ready();
  admission.start();
  logger.info({ member: scheduler.memberId, partitions: scheduler.partitions }, 'scheduler started');
  return {
    scheduler,
    dispatcher,
    admission,
    async stop() {
      await admission.stop();
      await Promise.all([seeds.close(), sweeps.close()]);
      await Promise.allSettled([seedsRunning, sweepsRunning]);
      await sweepsQueue.close();
      await scheduler.stop();
      await discovery.drain();
    },
  };
}

/** The periodic sweeps this configuration asks for (every scheduler upserts the same ones; the last start wins). */
async function scheduleSweeps(queue: SweepsQueue, config: Runtime['config']): Promise<void> {
  const want: [SweepName, number | null][] = [
    ['recrawl', config.recrawl.enabled ? config.recrawl.sweepIntervalS * 1000 : null],
    ['sitemaps', config.sitemaps.enabled ? config.sitemaps.sweepIntervalS * 1000 : null],
    ['prune', 3_600_000],
    ['seen-snapshot', config.seen.snapshotIntervalS > 0 ? config.seen.snapshotIntervalS * 1000 : null],
  ];
  for (const [name, everyMs] of want) {
    if (everyMs === null) await queue.unschedule(name);
    else await queue.schedule(name, everyMs);
  }
}

/**
 * Copies the seen-set's filter to the content store with the highest URL id it covers (taken
 * first), and keeps the newest TRAWL_SEEN_SNAPSHOT_KEEP. Skipped when a snapshot younger than
 * `minGapMs` exists (the sweep: half the interval): every scheduler's start, and every restore
 * after a Redis loss, schedules the sweep again, and a schedule's first job runs at once, when
 * the crawl is busiest starting.
 */
export async function takeSeenSnapshot(runtime: Runtime, now = Date.now(), minGapMs = 0): Promise<Record<string, unknown>> {
  const { db } = runtime;
  const snapshots = runtime.seenSnapshots();
  const newest = minGapMs > 0 ? await snapshots.newestAt() : null;
  if (newest !== null && now - newest < minGapMs) return { skipped: `the newest snapshot is ${Math.round((now - newest) / 1000)} s old` };
  const result = await snapshots.take(
    async () => {
      const [maxUrlId, urlsTable] = await Promise.all([db.maxUrlId(), db.urlsTableId()]);
      return { maxUrlId, urlsTable };
    },
    async () => (await runtime.intact()).ok,
    runtime.config.seen.snapshotKeep,
    now,
  );
  if ('skipped' in result) runtime.logger.warn({ reason: result.skipped }, 'seen-set snapshot skipped');
  else runtime.logger.info(result, 'seen-set snapshot taken');
  return result;
}

/** Days of re-crawl visits kept for the freshness report's deadline-miss rate. */
const KEEP_VISITS_MS = 30 * 86_400_000;

/** Runs one sweep (on whichever scheduler took its job). */
async function runSweep(runtime: Runtime, name: SweepName): Promise<Record<string, unknown>> {
  const { config } = runtime;
  const logger = runtime.logger.child({ component: 'sweep', sweep: name });
  // Nothing is pushed into a frontier Redis lost: the rebuild restores it from PostgreSQL.
  if (!(await runtime.intact()).ok) return { skipped: 'the namespace is waiting for trawl frontier rebuild' };
  const policy = await runtime.policy.get();
  switch (name) {
    case 'recrawl':
      if (!policy?.policy.recrawl.enabled) return { skipped: 're-crawl is off' };
      return recrawlSweep(
        { db: runtime.db, frontier: runtime.frontier, counters: runtime.counters, clock: runtime.clock, logger },
        { batch: config.recrawl.sweepBatch, perHost: config.recrawl.perHost, maxIntervalS: policy.recrawl.maxIntervalS },
      );
    case 'sitemaps':
      return sitemapSweep({ db: runtime.db, frontier: runtime.frontier, logger }, { batch: 1000, refreshMs: config.sitemaps.refreshIntervalS * 1000 });
    case 'prune':
      return { pruned: await new Freshness(runtime.db.pool, config.namespace).pruneVisits(KEEP_VISITS_MS) };
    case 'seen-snapshot':
      return takeSeenSnapshot(runtime, Date.now(), (config.seen.snapshotIntervalS * 1000) / 2);
  }
}
