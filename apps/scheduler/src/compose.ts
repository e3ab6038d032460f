import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { addSeeds, Dispatcher, publishConfigPolicy, Scheduler } from '@trawl/dispatch';
import { policyFromConfig } from '@trawl/crawl';
import { SeedsWorker } from '@trawl/queue';
import { restorePauses, type Runtime } from '@trawl/runtime';

export interface SchedulerService {
  scheduler: Scheduler;
  dispatcher: Dispatcher;
  stop(): Promise<void>;
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
  // Operator pauses outlive Redis: restore them from PostgreSQL before dispatching anything.
  await restorePauses(runtime);
  const discovery = runtime.discovery();
  const dispatcher = new Dispatcher(
    { frontier: runtime.frontier, queues: runtime.queues, policy: runtime.policy, clock: runtime.clock, logger: logger.child({ component: 'dispatcher' }) },
    { window: config.dispatch.window, pollMs: 25, leadMs: config.dispatch.leadMs },
  );
  const scheduler = new Scheduler(
    { redis: runtime.redis, namespace: config.namespace, partitions: config.partitions, dispatcher, discovery, clock: runtime.clock, logger: logger.child({ component: 'scheduler' }) },
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
      const report = await addSeeds({ policyStore: runtime.policyStore, discovery, basePolicy: () => policyFromConfig(config, []) }, data);
      await runtime.counters.flush();
      logger.info({ given: report.given, enqueued: report.enqueued, already_seen: report.already_seen }, 'seeds added');
      return { enqueued: report.enqueued, already_seen: report.already_seen };
    },
    (error) => logger.error({ err: error }, 'seeds queue error'),
  );
  await scheduler.start();
  const seedsRunning = seeds.run();
  await seeds.ready();
  logger.info({ member: scheduler.memberId, partitions: scheduler.partitions }, 'scheduler started');
  return {
    scheduler,
    dispatcher,
    async stop() {
      await seeds.close();
      await seedsRunning.catch(() => undefined);
      await scheduler.stop();
      await discovery.drain();
    },
  };
}
