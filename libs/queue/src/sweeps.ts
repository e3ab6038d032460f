import { type Job, Queue, Worker } from 'bullmq';
import type { RedisClient } from '@trawl/redis';

export const SWEEPS_QUEUE = 'sweeps';
/** The queue's BullMQ key prefix: its own Redis Cluster hash tag. */
export const sweepsQueuePrefix = (namespace: string): string => `${namespace}:{sweeps}`;

/** The periodic jobs the schedulers share: each runs on one scheduler at a time. */
export type SweepName = 'recrawl' | 'sitemaps' | 'prune' | 'seen-snapshot';

/**
 * The `sweeps` queue: one BullMQ job scheduler per periodic sweep (re-crawl, sitemap refresh,
 * pruning, seen-set snapshots). A job scheduler makes one job per interval whatever the number of schedulers, and a
 * job is processed by exactly one of them, so a sweep never runs twice at once.
 */
export class SweepsQueue {
  readonly queue: Queue;

  constructor(connection: RedisClient, namespace: string) {
    this.queue = new Queue(SWEEPS_QUEUE, {
      connection,
      prefix: sweepsQueuePrefix(namespace),
      defaultJobOptions: { removeOnComplete: { count: 100 }, removeOnFail: { count: 1000, age: 7 * 24 * 3600 } },
    });
  }

  /** Runs `name` every `everyMs` from now on (idempotent: every scheduler upserts the same one). */
  async schedule(name: SweepName, everyMs: number): Promise<void> {
    await this.queue.upsertJobScheduler(name, { every: Math.max(100, Math.round(everyMs)) }, { name, data: {} });
  }

  /** Stops running `name` (its setting was turned off). */
  async unschedule(name: SweepName): Promise<void> {
    await this.queue.removeJobScheduler(name);
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/** Runs the sweeps; a failed sweep is retried by the next interval's job, not by itself. */
export class SweepsWorker {
  readonly worker: Worker;

  constructor(connection: RedisClient, namespace: string, run: (name: SweepName) => Promise<Record<string, unknown>>, onError?: (error: Error) => void) {
    this.worker = new Worker(SWEEPS_QUEUE, async (job: Job) => run(job.name as SweepName), {
      connection,
      prefix: sweepsQueuePrefix(namespace),
      concurrency: 1,
      autorun: false,
      // A sweep of a large crawl may take a while: keep its lock comfortably.
      lockDuration: 120_000,
    });
    if (onError) this.worker.on('error', onError);
  }

  run(): Promise<void> {
    return this.worker.run();
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
