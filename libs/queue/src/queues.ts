import { randomUUID } from 'node:crypto';
import { DelayedError, type Job, type KeepJobs, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { RedisClient } from '@trawl/redis';
import { freshLeaseRetry } from './retry.js';
import { decodeFetchJob, encodeFetchJob, type FetchJob, type FetchJobContext, type FetchJobData, fetchJobDataSchema, fetchQueueName, fetchQueuePrefix, type JobResult } from './job.js';

export interface FetchQueueOptions {
  namespace: string;
  partitions: number;
  /** Tries per URL before the failed set. */
  attempts: number;
  /** Completed jobs kept for operators to look at. */
  keepCompleted?: KeepJobs;
  /**
   * Dead letters (BullMQ's failed set) kept per partition at most: beyond it the oldest go
   * (TRAWL_DLQ_MAX; default 100 000). Dead letters older than 30 days go too.
   */
  deadLetterMax?: number;
}

const DEFAULT_KEEP_COMPLETED: KeepJobs = { count: 1000, age: 3600 };
/**
 * Events a fetch queue's event stream keeps (BullMQ's default is 10 000). BullMQ appends to the
 * stream on every job state change (added, waiting, active, completed, delayed…) inside its own
 * scripts and has no option to stop that; nothing in trawl reads these streams (bull-board reads
 * the job sets, not events), so only a short tail is kept: a QueueEvents attached by hand still
 * sees events as they come, it only finds little history.
 */
export const FETCH_EVENTS_MAX_LEN = 100;
export const DEAD_LETTER_MAX_AGE_S = 30 * 24 * 3600;
export const DEFAULT_DEAD_LETTER_MAX = 100_000;

export interface DeadLetter {
  id: string;
  partition: number;
  url: string | null;
  /** "CODE: message (after N attempts)". */
  reason: string;
  attempts: number;
  failedAt: number | null;
}

/** Carries a retry delay chosen by the pipeline to BullMQ's backoff strategy. */
class RetryLater extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
    this.name = 'RetryLater';
  }
}

/** Producer side: one BullMQ queue per frontier partition. */
export class FetchQueues {
  private readonly queues: Queue[];

  constructor(
    private readonly connection: RedisClient,
    readonly options: FetchQueueOptions,
  ) {
    this.queues = Array.from(
      { length: options.partitions },
      (_, p) => new Queue(fetchQueueName(p), { connection, prefix: fetchQueuePrefix(options.namespace, p), streams: { events: { maxLen: FETCH_EVENTS_MAX_LEN } } }),
    );
  }

  queue(partition: number): Queue {
    const queue = this.queues[partition];
    if (!queue) throw new Error(`no fetch queue for partition ${partition}`);
    return queue;
  }

  /** All queues (for dashboards). */
  all(): readonly Queue[] {
    return this.queues;
  }

  /**
   * Adds one job per leased URL. The job id is the lease id, so adding the same lease twice
   * (a dispatcher retrying after a timeout) creates one job.
   */
  async addLeased(partition: number, jobs: readonly FetchJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.queue(partition).addBulk(
      jobs.map((job) => ({
        name: 'fetch',
        data: encodeFetchJob(job),
        opts: {
          jobId: job.leaseId ?? undefined,
          attempts: this.options.attempts,
          backoff: { type: 'trawl' },
          removeOnComplete: this.options.keepCompleted ?? DEFAULT_KEEP_COMPLETED,
          removeOnFail: { age: DEAD_LETTER_MAX_AGE_S, count: this.options.deadLetterMax ?? DEFAULT_DEAD_LETTER_MAX },
        },
      })),
    );
  }

  /**
   * Whether each of these jobs exists in the partition's queue (in any state): one EXISTS per job
   * hash, in one round trip — the orphan sweep asks this of every lease it looks at, and reading
   * whole jobs (`getJob`) for that moved each one's data and options for nothing.
   */
  async jobsExist(partition: number, ids: readonly string[]): Promise<boolean[]> {
    if (ids.length === 0) return [];
    const queue = this.queue(partition);
    const pipeline = this.connection.pipeline();
    for (const id of ids) pipeline.exists(queue.toKey(id));
    return ((await pipeline.exec()) ?? []).map(([error, found]) => {
      if (error) throw error;
      return found === 1;
    });
  }

  /** Jobs waiting to be picked up (not active, not delayed): the dispatcher's backpressure signal. */
  async waiting(partition: number): Promise<number> {
    return this.queue(partition).getWaitingCount();
  }

  /** The dead-letter queue: failed jobs of every partition, newest first. */
  async deadLetters(limit = 100): Promise<DeadLetter[]> {
    const out: DeadLetter[] = [];
    for (let partition = 0; partition < this.queues.length; partition += 1) {
      const jobs = await this.queue(partition).getFailed(0, limit - 1);
      for (const job of jobs) {
        const data = job.data as Partial<FetchJobData>;
        out.push({
          id: String(job.id),
          partition,
          url: typeof data.u === 'string' ? data.u : null,
          reason: job.failedReason ?? '',
          attempts: job.attemptsMade,
          failedAt: job.finishedOn ?? null,
        });
      }
    }
    return out.sort((a, b) => (b.failedAt ?? 0) - (a.failedAt ?? 0)).slice(0, limit);
  }

  /**
   * Re-runs dead-lettered jobs (all, or those ids) with fresh attempts and a fresh, explicit
   * lease id (`l`: `r-<uuid>`). They go through the host gate like any job, which adopts a lease
   * it has never seen. The old lease id would not do: its lease may have expired while the job
   * was failing, leaving a tombstone, and the gate drops a job whose lease is tombstoned as
   * stale, so the re-run would vanish unfetched. Returns how many were moved back to waiting.
   */
  async retryDeadLetters(ids: readonly string[] | 'all'): Promise<number> {
    let moved = 0;
    for (const queue of this.queues) {
      const jobs = ids === 'all' ? await queue.getFailed() : (await Promise.all(ids.map((id) => queue.getJob(id)))).filter((j) => j !== undefined);
      for (const job of jobs) {
        if ((await job.getState()) !== 'failed') continue;
        const data: unknown = job.data;
        // A payload that is not an object (dead-lettered as invalid) is re-run as it is, to fail the same way.
        if (data !== null && typeof data === 'object' && !Array.isArray(data)) await freshLeaseRetry(job, 'failed');
        else await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
        moved += 1;
      }
    }
    return moved;
  }

  async counts(): Promise<Record<string, number>> {
    const totals: Record<string, number> = {};
    for (const queue of this.queues) {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed');
      for (const [state, n] of Object.entries(counts)) totals[state] = (totals[state] ?? 0) + n;
    }
    return totals;
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.map((q) => q.close()));
  }
}

export interface FetchWorkerOptions {
  namespace: string;
  partition: number;
  concurrency: number;
  /** Job lock duration: a job whose worker stops renewing it this long is handed to another. */
  stalledMs: number;
  /** Called for a job whose payload fails validation (it is dead-lettered). */
  onInvalid?: (jobId: string, problem: string) => void;
  /** Called when the worker itself reports an error (connection trouble). */
  onError?: (error: Error) => void;
  /**
   * The worker process's member id: the jobs this worker takes are locked under a token that
   * starts with it (`<holder>|p<partition>|…`), so that when its heartbeat lapses another worker
   * finds them (`heldFetchJobs`) and frees their leases at once.
   */
  holder?: string;
}

/**
 * Consumer side: runs `process` for every job of one partition and turns its JobResult into a
 * BullMQ action. This is the only place that knows how deferral, retry and dead-lettering map
 * onto BullMQ (moveToDelayed + DelayedError, a thrown error with a custom backoff,
 * UnrecoverableError).
 */
export class FetchWorker {
  readonly worker: Worker;

  constructor(
    connection: RedisClient,
    options: FetchWorkerOptions,
    process: (job: FetchJobContext) => Promise<JobResult>,
  ) {
    this.worker = new Worker(
      fetchQueueName(options.partition),
      async (job: Job, token?: string, signal?: AbortSignal) => {
        const parsed = fetchJobDataSchema.safeParse(job.data);
        if (!parsed.success) {
          const problem = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
          options.onInvalid?.(String(job.id), problem);
          throw new UnrecoverableError(`ERR_JOB_DATA_INVALID: ${problem}`);
        }
        const result = await process({
          id: String(job.id),
          job: decodeFetchJob(parsed.data),
          token: token ?? `${job.id}:${job.attemptsStarted}`,
          attempt: job.attemptsMade + 1,
          maxAttempts: job.opts.attempts ?? 1,
          signal,
          redelivered: (job.stalledCounter ?? 0) > 0,
        });
        switch (result.outcome) {
          case 'done':
            return result.summary;
          case 'stale':
            return { stale: true };
          case 'defer':
            await job.moveToDelayed(Math.ceil(result.until), token);
            throw new DelayedError();
          case 'retry':
            throw new RetryLater(result.reason, result.delayMs);
          case 'dead':
            throw new UnrecoverableError(result.reason);
        }
      },
      {
        connection,
        prefix: fetchQueuePrefix(options.namespace, options.partition),
        concurrency: options.concurrency,
        lockDuration: options.stalledMs,
        stalledInterval: options.stalledMs,
        maxStalledCount: 5,
        autorun: false,
        settings: {
          backoffStrategy: (_attemptsMade: number, _type?: string, error?: Error) => (error instanceof RetryLater ? error.delayMs : 1000),
        },
      },
    );
    // BullMQ locks each job under `<worker id>:<n>`, the token the gate knows the attempt by.
    if (options.holder) (this.worker as { id: string }).id = `${options.holder}|p${options.partition}|${randomUUID().slice(0, 8)}`;
    this.worker.on('error', (error) => options.onError?.(error));
  }

  /** Starts consuming; resolves when the worker stops. */
  run(): Promise<void> {
    return this.worker.run();
  }

  /** Resolves once the worker's Redis connections are up (jobs added now are picked up at once). */
  async ready(): Promise<void> {
    await this.worker.waitUntilReady();
  }

  /** Stops taking jobs and waits for active ones to finish (or abandons them with force). */
  close(force = false): Promise<void> {
    return this.worker.close(force);
  }
}

/**
 * The fetch jobs of one partition that a worker process (`FetchWorkerOptions.holder`) holds
 * now: active in the queue under its lock. Read when its heartbeat lapses, to free their leases
 * without waiting for BullMQ's stalled check.
 */
export async function heldFetchJobs(redis: RedisClient, namespace: string, partition: number, holder: string): Promise<{ jobId: string; leaseId: string; token: string }[]> {
  const base = `${fetchQueuePrefix(namespace, partition)}:${fetchQueueName(partition)}`;
  const active = await redis.lrange(`${base}:active`, 0, -1);
  if (active.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const id of active) pipeline.get(`${base}:${id}:lock`).hget(`${base}:${id}`, 'data');
  const replies = ((await pipeline.exec()) ?? []).map(([, value]) => value as string | null);
  const held: { jobId: string; leaseId: string; token: string }[] = [];
  active.forEach((jobId, i) => {
    const token = replies[2 * i];
    const data = replies[2 * i + 1];
    if (!token?.startsWith(`${holder}|`) || !data) return;
    try {
      const parsed = fetchJobDataSchema.safeParse(JSON.parse(data));
      const leaseId = parsed.success ? decodeFetchJob(parsed.data).leaseId : null;
      if (leaseId) held.push({ jobId, leaseId, token });
    } catch {
      // An unreadable job is the dead-letter queue's business, not this sweep's.
    }
  });
  return held;
}
