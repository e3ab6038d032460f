import { isTrawlError, type TrawlError } from '@trawl/core';
import { type FetchJobContext, type FetchWorkerOptions, FetchWorker, type JobResult } from '@trawl/queue';
import type { Redis } from '@trawl/redis';
import type { Logger } from '@trawl/telemetry';
import type { CrawlWorkerDeps } from './deps.js';
import { processFetchJob } from './fetch/fetch-job.js';

export interface CrawlWorkerOptions {
  /** A connection for BullMQ's blocking commands. */
  connection: Redis;
  namespace: string;
  /** Partitions to consume. */
  partitions: readonly number[];
  /** Jobs run at once in this process (per partition queue). */
  concurrency: number;
  /** BullMQ job lock duration. */
  stalledMs: number;
  /** How jobs that leave the ready list for the BullMQ queue are tried and kept (as the dispatcher's). */
  jobs: FetchWorkerOptions['jobs'];
  logger: Logger;
  /**
   * This worker process's member id, once it has joined the crawl's workers: the jobs it takes
   * are locked under it, so its holds end with its heartbeat (see `heldFetchJobs`).
   */
  holder?: () => string | undefined;
  /**
   * A fault no retry can fix (disk full, a read-only content directory, a database refusing the
   * schema): the job goes back to the queue untouched, and this is called so the process can
   * stop with a clear message.
   */
  onFatal?: (error: TrawlError) => void;
}

/**
 * The fetch stage's consumer: one FetchWorker (the ready list and the BullMQ queue) per partition, all sharing this process's
 * batchers (discovery, records, acks) so their round trips coalesce.
 */
export class CrawlWorker {
  private readonly consumers = new Map<number, { worker: FetchWorker; running: Promise<void> }>();
  /** Consumers being closed (a partition handed to another worker): stop() waits for them too. */
  private readonly closing = new Set<Promise<void>>();
  /** The jobs running now, each with the controller that aborts its fetch (`abortInFlight`). */
  private readonly inFlight = new Map<FetchJobContext, { controller: AbortController; done: Promise<unknown> }>();

  constructor(
    readonly deps: CrawlWorkerDeps,
    private readonly options: CrawlWorkerOptions,
  ) {}

  /** Starts consuming the partitions given at construction. */
  start(): void {
    this.consume(this.options.partitions);
  }

  /** The partitions this worker consumes now. */
  get partitions(): number[] {
    return [...this.consumers.keys()].sort((a, b) => a - b);
  }

  /**
   * Consumes exactly these partitions from now on: new ones start at once; ones no longer
   * wanted stop taking jobs and finish those they hold.
   */
  consume(partitions: readonly number[]): void {
    const wanted = new Set(partitions);
    for (const [partition, consumer] of this.consumers) {
      if (wanted.has(partition)) continue;
      this.consumers.delete(partition);
      const closed = consumer.worker.close().then(() => consumer.running.catch(() => undefined));
      this.closing.add(closed);
      void closed.finally(() => this.closing.delete(closed));
    }
    for (const partition of wanted) {
      if (this.consumers.has(partition)) continue;
      const { options } = this;
      const worker = new FetchWorker(
        options.connection,
        {
          namespace: options.namespace,
          partition,
          concurrency: options.concurrency,
          stalledMs: options.stalledMs,
          jobs: options.jobs,
          holder: options.holder?.(),
          onInvalid: (jobId, problem) => options.logger.warn({ jobId, problem }, 'invalid fetch job dead-lettered'),
          onError: (error) => options.logger.error({ err: error, partition }, 'fetch worker error'),
        },
        (job) => this.process(job),
      );
      this.consumers.set(partition, { worker, running: worker.run() });
    }
  }

  /** The first fatal error a job met, if any. */
  fatal: TrawlError | null = null;

  private async process(job: FetchJobContext): Promise<JobResult> {
    const controller = new AbortController();
    const signal = job.signal === undefined ? controller.signal : AbortSignal.any([job.signal, controller.signal]);
    const running = this.run({ ...job, signal });
    this.inFlight.set(job, { controller, done: running.catch(() => undefined) });
    try {
      return await running;
    } finally {
      this.inFlight.delete(job);
    }
  }

  /** Jobs running in this process now. */
  get running(): number {
    return this.inFlight.size;
  }

  /**
   * Aborts every fetch in flight (Redis lost the crawl: each host's gate is gone, so a request
   * still going would collide with the rebuilt crawl's) and waits, at most `timeoutMs`, for
   * their jobs to end. Returns whether none is left.
   */
  async abortInFlight(reason: string, timeoutMs: number): Promise<boolean> {
    const jobs = [...this.inFlight.values()];
    for (const { controller } of jobs) controller.abort(new Error(reason));
    const ended = Promise.all(jobs.map((j) => j.done)).then(() => true);
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
    return Promise.race([ended, timeout]);
  }

  private async run(job: FetchJobContext): Promise<JobResult> {
    try {
      return await processFetchJob(this.deps, job);
    } catch (error) {
      if (!isTrawlError(error) || error.action !== 'fatal') throw error;
      if (!this.fatal) {
        this.fatal = error;
        this.options.logger.fatal({ err: error, url: job.job.url }, 'fatal error: this worker stops taking jobs');
        this.options.onFatal?.(error);
      }
      // Not an attempt and not a failure: the job waits for a healthy worker (or this one, fixed).
      return { outcome: 'defer', until: this.deps.clock.now() + 5000 };
    }
  }

  /** Resolves when every partition's consumer is connected. */
  async ready(): Promise<void> {
    await Promise.all([...this.consumers.values()].map((c) => c.worker.ready()));
  }

  /**
   * Stops taking jobs and lets in-flight ones finish (up to `timeoutMs`; after that they are
   * abandoned and their leases bring them back). The batchers it shares with the process stage
   * are drained by `closePipeline`, once both stages have stopped.
   */
  async stop(timeoutMs: number): Promise<{ drained: boolean }> {
    const consumers = [...this.consumers.values()];
    this.consumers.clear();
    const graceful = Promise.all([...consumers.map((c) => c.worker.close()), ...this.closing]).then(() => true);
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
    const drained = await Promise.race([graceful, timeout]);
    if (!drained) await Promise.all(consumers.map((c) => c.worker.close(true)));
    await Promise.allSettled(consumers.map((c) => c.running));
    return { drained };
  }
}
