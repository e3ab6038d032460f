import { randomUUID } from 'node:crypto';
import { DelayedError, type Job, type JobsOptions, type KeepJobs, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { RedisClient } from '@trawl/redis';
import { type ReadyJob, ReadyJobs, readyJobToken } from './ready.js';
import { describeIssues } from './seeds.js';
import { freshLeaseRetry } from './retry.js';
import { decodeFetchJob, encodeFetchJob, type FetchJob, type FetchJobContext, type FetchJobData, fetchJobDataSchema, fetchQueueName, fetchQueuePrefix, type JobResult, REASON_MAX_LENGTH } from './job.js';

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

/** A fetch job's BullMQ options: its tries, backoff and how long it is kept once finished. */
export function fetchJobOptions(options: Pick<FetchQueueOptions, 'attempts' | 'keepCompleted' | 'deadLetterMax'>): JobsOptions {
  return {
    attempts: options.attempts,
    backoff: { type: 'trawl' },
    removeOnComplete: options.keepCompleted ?? DEFAULT_KEEP_COMPLETED,
    removeOnFail: { age: DEAD_LETTER_MAX_AGE_S, count: options.deadLetterMax ?? DEFAULT_DEAD_LETTER_MAX },
  };
}

/**
 * Producer side, per frontier partition: the ready list dispatched jobs go to, and the BullMQ
 * queue that holds the jobs off the straight path (deferred far ahead, retried, dead letters, added by hand).
 */
export class FetchQueues {
  private readonly queues: Queue[];
  private readonly ready: ReadyJobs;

  constructor(
    private readonly connection: RedisClient,
    readonly options: FetchQueueOptions,
  ) {
    this.ready = new ReadyJobs(connection, options.namespace);
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
   * Adds one job per leased URL: onto the partition's ready list (see ReadyJobs), each lease
   * once, so a dispatcher adding the same lease twice (retrying after a timeout) makes one job.
   * A job without a lease (one made by hand) becomes a BullMQ job, adopted at the gate.
   */
  async addLeased(partition: number, jobs: readonly FetchJob[]): Promise<void> {
    if (jobs.length === 0) return;
    const leased = jobs.filter((job) => job.leaseId !== null);
    const unleased = jobs.filter((job) => job.leaseId === null);
    await Promise.all([
      this.ready.add(partition, leased.map((job) => ({ id: job.leaseId as string, payload: JSON.stringify(encodeFetchJob(job)) }))),
      unleased.length === 0 ? undefined : this.queue(partition).addBulk(unleased.map((job) => ({ name: 'fetch', data: encodeFetchJob(job), opts: fetchJobOptions(this.options) }))),
    ]);
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
    const [inQueue, onList] = await Promise.all([pipeline.exec(), this.ready.exist(partition, ids)]);
    return (inQueue ?? []).map(([error, found], i) => {
      if (error) throw error;
      return found === 1 || onList[i] === true;
    });
  }

  /** Jobs waiting to be picked up (not active, not delayed): the dispatcher's backpressure signal. */
  async waiting(partition: number): Promise<number> {
    const [inQueue, onList] = await Promise.all([this.queue(partition).getWaitingCount(), this.ready.waiting(partition)]);
    return inQueue + onList;
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
          attempts: job.attemptsMade + (typeof data.a === 'number' ? data.a : 0),
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
    for (const [partition, queue] of this.queues.entries()) {
      const [counts, ready] = await Promise.all([queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed'), this.ready.counts(partition)]);
      for (const [state, n] of Object.entries(ready)) counts[state] = (counts[state] ?? 0) + n;
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
  /** Jobs run at once, from the ready list and the BullMQ queue together. */
  concurrency: number;
  /** Job lock duration: a job whose worker stops renewing it this long is handed to another. */
  stalledMs: number;
  /** How jobs that leave the ready list for the BullMQ queue are tried and kept (the producers' settings). */
  jobs: Pick<FetchQueueOptions, 'attempts' | 'keepCompleted' | 'deadLetterMax'>;
  /** Called for a job whose payload fails validation (it is dead-lettered). */
  onInvalid?: (jobId: string, problem: string) => void;
  /** Called when the worker itself reports an error (connection trouble). */
  onError?: (error: Error) => void;
  /**
   * The worker process's member id: the jobs this worker takes are held under a name and locked
   * under a token that start with it (`<holder>|p<partition>|…`), so that when its heartbeat
   * lapses another worker finds them (`heldFetchJobs`) and frees their leases at once.
   */
  holder?: string;
}

/**
 * A ready-list job deferred at most this far ahead waits in its worker, still held; one due later
 * (a long Crawl-delay, a blocked host's next tier) becomes a BullMQ delayed job.
 */
const LOCAL_DEFER_MAX_MS = 30_000;

/** How long the ready list's consumer blocks for a job at a time (seconds): also the longest a close waits for it. */
const READY_BLOCK_S = 0.5;

/**
 * Consumer side: runs `process` for every job of one partition — those on its ready list and
 * those in its BullMQ queue — at most `concurrency` at once, and turns each JobResult into
 * what follows. This is the only place that knows how deferral, retry and dead-lettering map
 * onto BullMQ (moveToDelayed + DelayedError, a thrown error with a custom backoff,
 * UnrecoverableError); a job from the ready list waits for a turn due soon in the worker, and
 * one that leaves the straight path becomes a BullMQ job (delayed, or failed) carrying the tries
 * it has made (`a`).
 */
export class FetchWorker {
  readonly worker: Worker;
  private readonly slots: Slots;
  private readonly lane: ReadyLane;

  constructor(
    connection: RedisClient,
    options: FetchWorkerOptions,
    process: (job: FetchJobContext) => Promise<JobResult>,
  ) {
    const slots = new Slots(options.concurrency);
    this.slots = slots;
    this.worker = new Worker(
      fetchQueueName(options.partition),
      async (job: Job, token?: string, signal?: AbortSignal) => {
        const parsed = fetchJobDataSchema.safeParse(job.data);
        if (!parsed.success) {
          const problem = describeIssues(parsed.error);
          options.onInvalid?.(String(job.id), problem);
          throw new UnrecoverableError(`ERR_JOB_DATA_INVALID: ${problem}`);
        }
        // A job from the ready list that its pipeline gave up on: straight to the failed set.
        if (parsed.data.e !== undefined) throw new UnrecoverableError(parsed.data.e);
        const before = parsed.data.a ?? 0;
        await slots.acquire();
        let result: JobResult;
        try {
          result = await process({
            id: String(job.id),
            job: decodeFetchJob(parsed.data),
            token: token ?? `${job.id}:${job.attemptsStarted}`,
            attempt: job.attemptsMade + 1 + before,
            maxAttempts: (job.opts.attempts ?? 1) + before,
            signal,
            redelivered: (job.stalledCounter ?? 0) > 0,
          });
        } finally {
          slots.release();
        }
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
    const consumer = `${options.holder ?? `anonymous-${randomUUID().slice(0, 8)}`}|p${options.partition}|${randomUUID().slice(0, 8)}`;
    // BullMQ locks each job under `<worker id>:<n>`, the token the gate knows the attempt by.
    if (options.holder) (this.worker as { id: string }).id = consumer;
    this.worker.on('error', (error) => options.onError?.(error));
    this.lane = new ReadyLane(connection, options, consumer, slots, process);
  }

  /** Starts consuming; resolves when the worker stops. */
  async run(): Promise<void> {
    await Promise.all([this.worker.run(), this.lane.run()]);
  }

  /** Resolves once the worker's Redis connections are up (jobs added now are picked up at once). */
  async ready(): Promise<void> {
    await Promise.all([this.worker.waitUntilReady(), this.lane.ready()]);
  }

  /** Stops taking jobs and waits for active ones to finish (or abandons them with force). */
  async close(force = false): Promise<void> {
    this.slots.close();
    await Promise.all([this.lane.close(force), this.worker.close(force)]);
  }
}

/**
 * A worker's job slots, shared by its ready list's consumer and its BullMQ worker: together they
 * run at most `size` jobs. A waiting acquirer is handed the next slot released.
 */
class Slots {
  private used = 0;
  private readonly waiting: (() => void)[] = [];
  private freed: (() => void) | null = null;
  private closed = false;

  constructor(private readonly size: number) {}

  /** Slots no one holds or waits for. */
  get free(): number {
    return Math.max(0, this.size - this.used - this.waiting.length);
  }

  acquire(): Promise<void> {
    if (this.used < this.size && this.waiting.length === 0) {
      this.used += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) {
      next();
      return;
    }
    this.used -= 1;
    this.wake();
  }

  /** Resolves once a slot is free (or the slots are closed). */
  whenFree(): Promise<void> {
    if (this.free > 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => (this.freed = resolve));
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  private wake(): void {
    const freed = this.freed;
    this.freed = null;
    freed?.();
  }
}

/**
 * Takes a partition's ready-list jobs (see ReadyJobs) as slots free up — one blocking move, then
 * as many more as there are free slots in one script — and runs them. A job's end takes it off
 * the consumer's held list; one that leaves the straight path goes to the BullMQ queue first.
 */
class ReadyLane {
  private readonly jobs: ReadyJobs;
  private readonly blocking: RedisClient;
  /** The BullMQ queue deferred, retried and dead-lettered jobs go to. */
  private readonly queue: Queue;
  private readonly running = new Map<string, Promise<void>>();
  /** Held jobs waiting here for their host's turn, by id. */
  private readonly deferred = new Map<string, NodeJS.Timeout>();
  private readonly controller = new AbortController();
  private loop: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly connection: RedisClient,
    private readonly options: FetchWorkerOptions,
    /** This consumer's name: its held list's, and the start of its attempts' tokens. */
    private readonly consumer: string,
    private readonly slots: Slots,
    private readonly process: (job: FetchJobContext) => Promise<JobResult>,
  ) {
    this.jobs = new ReadyJobs(connection, options.namespace);
    // Its own connection: a blocking move holds it until a job comes.
    this.blocking = (connection as { duplicate(): RedisClient }).duplicate();
    this.blocking.on('error', (error: Error) => options.onError?.(error));
    this.queue = new Queue(fetchQueueName(options.partition), {
      connection,
      prefix: fetchQueuePrefix(options.namespace, options.partition),
      streams: { events: { maxLen: FETCH_EVENTS_MAX_LEN } },
    });
  }

  async ready(): Promise<void> {
    await Promise.all([this.queue.waitUntilReady(), this.blocking.ping()]);
  }

  run(): Promise<void> {
    this.loop ??= this.consume();
    return this.loop;
  }

  private async consume(): Promise<void> {
    const { partition } = this.options;
    const keys = this.jobs.keys(partition);
    const held = keys.heldPrefix + this.consumer;
    await this.jobs.register(partition, this.consumer).catch((error: Error) => this.options.onError?.(error));
    while (!this.closed) {
      await this.slots.whenFree();
      if (this.closed) break;
      let taken: ReadyJob[];
      try {
        const first = await this.blocking.blmove(keys.ready, held, 'LEFT', 'RIGHT', READY_BLOCK_S);
        // Moved as the consumer closes: given back by close().
        if (first === null || this.closed) continue;
        taken = await this.jobs.take(partition, this.consumer, first, this.slots.free - 1);
      } catch (error) {
        if (this.closed) break;
        this.options.onError?.(error as Error);
        // What was moved and never started goes back for the next try.
        await this.jobs.giveBack(partition, this.consumer, [...this.running.keys()]).catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      for (const job of taken) this.start(job);
    }
  }

  private start(job: ReadyJob): void {
    const done = this.runJob(job)
      .catch((error: unknown) => this.options.onError?.(error as Error))
      .finally(() => this.running.delete(job.id));
    this.running.set(job.id, done);
  }

  private async runJob(entry: ReadyJob): Promise<void> {
    const { options } = this;
    let data: unknown;
    try {
      data = JSON.parse(entry.payload);
    } catch {
      data = entry.payload;
    }
    const parsed = fetchJobDataSchema.safeParse(data);
    if (!parsed.success) {
      // The BullMQ worker dead-letters it, as it would have from the start.
      await this.toQueue(entry, data, { attempts: 1 });
      return;
    }
    const before = parsed.data.a ?? 0;
    const maxAttempts = Math.max(1, options.jobs.attempts);
    await this.slots.acquire();
    let result: JobResult;
    try {
      result = await this.process({
        id: entry.id,
        job: decodeFetchJob(parsed.data),
        token: readyJobToken(this.consumer, entry.id),
        attempt: before + 1,
        maxAttempts,
        signal: this.controller.signal,
      });
    } catch (error) {
      // As the BullMQ worker does with a thrown error: an attempt, tried again a second later.
      result = { outcome: 'retry', reason: error instanceof Error ? error.message : String(error), delayMs: 1000 };
    } finally {
      this.slots.release();
    }
    const made = before + 1;
    switch (result.outcome) {
      case 'done':
      case 'stale':
        await this.jobs.finish(options.partition, this.consumer, entry.id, true);
        return;
      case 'defer': {
        const waitMs = Math.ceil(result.until) - Date.now();
        // A turn due soon (the host's delay, the page after robots.txt) is waited for here,
        // the job still held (a crash frees it with the rest); a BullMQ delayed job would come
        // back up to ~100 ms late, and cost its add, promotion and pick-up.
        // A closing worker leaves it held: close() gives it back for another worker to run.
        if (waitMs > LOCAL_DEFER_MAX_MS) await this.toQueue(entry, parsed.data, { attempts: maxAttempts - before, delay: waitMs });
        else if (!this.closed) this.deferHere(entry, waitMs);
        return;
      }
      case 'retry':
      case 'dead':
        if (result.outcome === 'retry' && made < maxAttempts) await this.toQueue(entry, { ...parsed.data, a: made }, { attempts: maxAttempts - made, delay: result.delayMs });
        // Given up, or no try left: to the dead-letter queue with the reason.
        else await this.toQueue(entry, { ...parsed.data, a: made, e: result.reason.slice(0, REASON_MAX_LENGTH) }, { attempts: 1 });
        return;
    }
  }

  /** Runs the held job again in `waitMs` (holding no slot meanwhile); a close gives it back instead. */
  private deferHere(entry: ReadyJob, waitMs: number): void {
    const timer = setTimeout(() => {
      this.deferred.delete(entry.id);
      if (!this.closed) this.start(entry);
    }, Math.max(0, waitMs));
    this.deferred.set(entry.id, timer);
  }

  /** The job leaves the ready list for the BullMQ queue (added first: a crash between keeps both, never neither). */
  private async toQueue(entry: ReadyJob, data: unknown, opts: { attempts: number; delay?: number }): Promise<void> {
    await this.queue.add('fetch', data, {
      ...fetchJobOptions(this.options.jobs),
      jobId: entry.id,
      attempts: Math.max(1, opts.attempts),
      ...(opts.delay !== undefined && opts.delay > 0 ? { delay: opts.delay } : {}),
    });
    await this.jobs.finish(this.options.partition, this.consumer, entry.id, false);
  }

  /**
   * Stops taking jobs; waits for those running (with force, aborts them and leaves them held:
   * their leases come back with the process's heartbeat), then gives back the jobs it took and
   * is not running (never started, or waiting here for their turn).
   */
  async close(force: boolean): Promise<void> {
    this.closed = true;
    for (const timer of this.deferred.values()) clearTimeout(timer);
    this.deferred.clear();
    await this.loop?.catch(() => undefined);
    if (force) this.controller.abort(new Error('the fetch worker is closing'));
    else await Promise.allSettled([...this.running.values()]);
    try {
      await this.jobs.giveBack(this.options.partition, this.consumer, [...this.running.keys()]);
    } catch (error) {
      this.options.onError?.(error as Error);
    }
    this.blocking.disconnect();
    await this.queue.close();
  }
}

/**
 * The fetch jobs of one partition that a worker process (`FetchWorkerOptions.holder`) holds
 * now: taken from the ready list onto its held lists, or active in the BullMQ queue under its
 * lock. Read when its heartbeat lapses, to free their leases without waiting for their lease to
 * run out or BullMQ's stalled check; then `forgetHeldFetchJobs` drops the ready list's ones.
 */
export async function heldFetchJobs(redis: RedisClient, namespace: string, partition: number, holder: string): Promise<{ jobId: string; leaseId: string; token: string }[]> {
  const held: { jobId: string; leaseId: string; token: string }[] = [];
  const leaseOf = (data: string): string | null => {
    try {
      const parsed = fetchJobDataSchema.safeParse(JSON.parse(data));
      return parsed.success ? decodeFetchJob(parsed.data).leaseId : null;
    } catch {
      // An unreadable job is the dead-letter queue's business, not this sweep's.
      return null;
    }
  };
  for (const job of await new ReadyJobs(redis, namespace).heldBy(partition, holder)) {
    held.push({ jobId: job.id, leaseId: leaseOf(job.payload) ?? job.id, token: job.token });
  }
  const base = `${fetchQueuePrefix(namespace, partition)}:${fetchQueueName(partition)}`;
  const active = await redis.lrange(`${base}:active`, 0, -1);
  if (active.length === 0) return held;
  const pipeline = redis.pipeline();
  for (const id of active) pipeline.get(`${base}:${id}:lock`).hget(`${base}:${id}`, 'data');
  const replies = ((await pipeline.exec()) ?? []).map(([, value]) => value as string | null);
  active.forEach((jobId, i) => {
    const token = replies[2 * i];
    const data = replies[2 * i + 1];
    if (!token?.startsWith(`${holder}|`) || !data) return;
    const leaseId = leaseOf(data);
    if (leaseId) held.push({ jobId, leaseId, token });
  });
  return held;
}

/** Drops the ready-list jobs a lapsed worker process held (after their leases were freed). Returns how many. */
export function forgetHeldFetchJobs(redis: RedisClient, namespace: string, partition: number, holder: string): Promise<number> {
  return new ReadyJobs(redis, namespace).forget(partition, holder);
}
