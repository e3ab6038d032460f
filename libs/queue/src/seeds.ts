import { type Job, Queue, UnrecoverableError, WaitingError, Worker } from 'bullmq';
import type { RedisClient } from '@trawl/redis';
import { z } from 'zod';

/**
 * A `seeds` job: URLs an operator wants crawled, from `trawl seed`, the REST API or bull-board's
 * "Add job". Field names follow the REST API (snake_case), since operators type them by hand.
 */
export const seedsJobSchema = z
  .object({
    urls: z.array(z.string().min(1, 'must not be empty').max(65_536, 'longer than 65,536 characters')).min(1, 'give at least one URL').max(10_000, 'at most 10,000 URLs per job'),
    /** 0..1: the seeds' priority (their band in their hosts' back queues). */
    priority: z.number().min(0).max(1).optional(),
    /** Links followed from these seeds at most (0: the seeds only); the crawl's own limit still applies. */
    max_depth: z.number().int().min(0).max(1000).optional(),
    /** How these seeds widen the crawl's scope: their hosts, their registrable domains, or everything. */
    scope: z.enum(['host', 'domain', 'any']).optional(),
  })
  .strict();
export type SeedsJobData = z.output<typeof seedsJobSchema>;

/** What a seeds job did: `enqueued` new URLs, `already_seen` known ones. */
export interface SeedsJobResult {
  enqueued: number;
  already_seen: number;
}

export const SEEDS_QUEUE = 'seeds';
/** The queue's BullMQ key prefix: its own Redis Cluster hash tag. */
export const seedsQueuePrefix = (namespace: string): string => `${namespace}:{seeds}`;

/** Reads a zod failure as "field: problem" lines an operator can act on. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/** Producer side of the `seeds` queue. */
export class SeedsQueue {
  readonly queue: Queue;

  constructor(connection: RedisClient, namespace: string) {
    this.queue = new Queue(SEEDS_QUEUE, {
      connection,
      prefix: seedsQueuePrefix(namespace),
      defaultJobOptions: { removeOnComplete: { count: 1000, age: 7 * 24 * 3600 }, removeOnFail: { count: 1000, age: 30 * 24 * 3600 } },
    });
  }

  /** Adds a job after validating it (a malformed job is refused here, before it reaches the queue). */
  async add(data: unknown, options: { jobId?: string } = {}): Promise<string> {
    const parsed = seedsJobSchema.safeParse(data);
    if (!parsed.success) throw new Error(`invalid seeds job: ${describeIssues(parsed.error)}`);
    const job = await this.queue.add('seeds', parsed.data, { jobId: options.jobId, attempts: 3, backoff: { type: 'exponential', delay: 1000 } });
    return String(job.id);
  }

  /**
   * Waits for a job to finish; resolves with its result, or with its failure reason, or null when
   * nothing processed it in time (no scheduler running).
   */
  async wait(jobId: string, timeoutMs: number): Promise<{ state: 'completed'; result: SeedsJobResult } | { state: 'failed'; reason: string } | null> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const state = await this.queue.getJobState(jobId);
      if (state === 'completed' || state === 'failed') {
        // Read the job after its state: a snapshot taken before it finished has no result yet.
        const job = await this.queue.getJob(jobId);
        if (!job) return { state: 'failed', reason: 'the job is gone (removed from the queue)' };
        return state === 'completed' ? { state, result: job.returnvalue as SeedsJobResult } : { state, reason: job.failedReason ?? '' };
      }
      if (state === 'unknown') return { state: 'failed', reason: 'the job is gone (removed from the queue)' };
      if (Date.now() > end) return null;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async counts(): Promise<Record<string, number>> {
    return this.queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed');
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/** Thrown by a seeds processor for a job that can never succeed (bad URLs): fails it without retries. */
export class SeedsRejected extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'SeedsRejected';
  }
}

/**
 * Consumer side: validates each job's data (a job added by hand, e.g. from bull-board, may be
 * anything) and runs `process`. Invalid data and rejected URLs fail the job at once with a reason
 * naming the field or URL; other errors are retried.
 *
 * With `admit` (seed admission), a job is taken only while it answers true: a job that finds it
 * false goes back to the waiting list untouched and the worker pauses, and after each job the
 * worker pauses when the answer has turned false, so it does not take the next one. Whoever
 * watches admission calls `resume()` when seeds may flow again.
 */
export class SeedsWorker {
  readonly worker: Worker;

  constructor(
    connection: RedisClient,
    namespace: string,
    process: (data: SeedsJobData, jobId: string) => Promise<SeedsJobResult>,
    onError?: (error: Error) => void,
    options: { admit?: () => Promise<boolean> } = {},
  ) {
    const admit = options.admit;
    this.worker = new Worker(
      SEEDS_QUEUE,
      async (job: Job, token?: string) => {
        if (admit && !(await admit())) {
          // Paused before it is moved, so the worker's next fetch does not take it straight back.
          await this.pause();
          await job.moveToWait(token);
          throw new WaitingError();
        }
        const parsed = seedsJobSchema.safeParse(job.data);
        if (!parsed.success) throw new UnrecoverableError(`ERR_JOB_DATA_INVALID: ${describeIssues(parsed.error)}`);
        let result: SeedsJobResult;
        try {
          result = await process(parsed.data, String(job.id));
        } catch (error) {
          if (error instanceof SeedsRejected) throw new UnrecoverableError(`ERR_SEEDS_INVALID: ${error.message}`);
          throw error;
        }
        // Paused before the job completes: completing it would otherwise fetch the next one.
        if (admit && !(await admit())) await this.pause();
        return result;
      },
      { connection, prefix: seedsQueuePrefix(namespace), concurrency: 1, autorun: false },
    );
    if (onError) this.worker.on('error', onError);
  }

  run(): Promise<void> {
    return this.worker.run();
  }

  async ready(): Promise<void> {
    await this.worker.waitUntilReady();
  }

  /** Takes no more jobs (the one in hand, if any, finishes); they wait in the queue. */
  pause(): Promise<void> {
    // Without waiting for the active job: the processor itself pauses the worker.
    return this.worker.pause(true);
  }

  /** Takes jobs again after `pause`. */
  resume(): Promise<void> {
    return this.worker.resume();
  }

  get paused(): boolean {
    return this.worker.isPaused();
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
