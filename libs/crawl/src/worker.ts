import { FetchWorker } from '@trawl/queue';
import { Discovery } from './discovery.js';
import { cachedDisallowReasons } from './robots-step.js';
import { type PipelineDeps, processFetchJob } from './process.js';
import { Acks, Records } from './records.js';
import type { Runtime } from './runtime.js';

export interface CrawlWorkerOptions {
  /** Jobs run at once in this process (per partition queue). */
  concurrency: number;
  /** Partitions to consume; default all. */
  partitions?: number[];
}

/**
 * Consumes fetch jobs: one BullMQ worker per partition, all sharing this process's batchers
 * (discovery, records, acks) so their round trips coalesce.
 */
export class CrawlWorker {
  private readonly workers: FetchWorker[] = [];
  private readonly running: Promise<void>[] = [];
  readonly discovery: Discovery;
  readonly records: Records;
  readonly acks: Acks;
  private readonly deps: PipelineDeps;

  constructor(
    private readonly runtime: Runtime,
    private readonly options: CrawlWorkerOptions,
  ) {
    const { config } = runtime;
    this.discovery = createDiscovery(runtime);
    this.records = new Records(runtime.db);
    this.acks = new Acks(runtime.frontier);
    this.deps = {
      frontier: runtime.frontier,
      fetcher: runtime.fetcher,
      store: runtime.store,
      robots: runtime.robots,
      discovery: this.discovery,
      records: this.records,
      acks: this.acks,
      policy: runtime.policy,
      counters: runtime.counters,
      clock: runtime.clock,
      logger: runtime.logger.child({ component: 'worker' }),
      retry: { baseMs: config.worker.retryBaseMs, maxMs: config.worker.retryMaxMs },
      leaseMs: config.worker.leaseMs,
      gateWaitMs: Math.max(100, 4 * config.dispatch.leadMs),
      recordSitemaps: async (origin, urls) => {
        const { rejected } = await runtime.db.recordSitemaps(origin, urls);
        if (rejected.length > 0) runtime.logger.warn({ origin, rejected }, 'PostgreSQL refused sitemap URLs; they are dropped');
      },
    };
  }

  start(): void {
    const { runtime } = this;
    const partitions = this.options.partitions ?? Array.from({ length: runtime.config.partitions }, (_, p) => p);
    for (const partition of partitions) {
      const worker = new FetchWorker(
        runtime.blockingRedis(),
        {
          namespace: runtime.config.namespace,
          partition,
          concurrency: this.options.concurrency,
          stalledMs: runtime.config.worker.stalledMs,
          onInvalid: (jobId, problem) => runtime.logger.warn({ jobId, problem }, 'invalid fetch job dead-lettered'),
          onError: (error) => runtime.logger.error({ err: error, partition }, 'fetch worker error'),
        },
        (job) => processFetchJob(this.deps, job),
      );
      this.workers.push(worker);
      this.running.push(worker.run());
    }
  }

  /** Resolves when every partition's consumer is connected. */
  async ready(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.ready()));
  }

  /**
   * Stops taking jobs and lets in-flight ones finish (up to `timeoutMs`; after that they are
   * abandoned and their leases bring them back), then flushes the batchers.
   */
  async stop(timeoutMs: number): Promise<{ drained: boolean }> {
    const graceful = Promise.all(this.workers.map((w) => w.close())).then(() => true);
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
    const drained = await Promise.race([graceful, timeout]);
    if (!drained) await Promise.all(this.workers.map((w) => w.close(true)));
    await Promise.allSettled(this.running);
    await Promise.allSettled([this.discovery.drain(), this.records.drain(), this.acks.drain()]);
    await this.runtime.counters.flush().catch(() => undefined);
    return { drained };
  }
}

export function createDiscovery(runtime: Runtime): Discovery {
  let limits = { maxUrlsPerHost: runtime.config.policy.maxUrlsPerHost, maxQueryVariants: runtime.config.policy.maxQueryVariants };
  const refresh = () =>
    void runtime.policy.get().then((p) => {
      if (p) limits = { maxUrlsPerHost: p.policy.maxUrlsPerHost, maxQueryVariants: p.policy.maxQueryVariants };
    });
  refresh();
  return new Discovery({
    seen: runtime.seen,
    db: runtime.db,
    frontier: runtime.frontier,
    counters: runtime.counters,
    logger: runtime.logger.child({ component: 'discovery' }),
    limits: () => {
      refresh();
      return limits;
    },
    robotsVerdicts: async (urls) => {
      const policy = await runtime.policy.get();
      return policy ? cachedDisallowReasons({ cache: runtime.robots, now: () => runtime.clock.now() }, policy, urls) : urls.map(() => null);
    },
  });
}
