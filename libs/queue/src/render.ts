import { DelayedError, type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { RedisClient } from '@trawl/redis';
import { z } from 'zod';

export const RENDER_QUEUE = 'render';
/** The queue's BullMQ key prefix: its own Redis Cluster hash tag. */
export const renderQueuePrefix = (namespace: string): string => `${namespace}:{render}`;
/** The live render stages: member → alive-until (ms), a sorted set under the render queue's hash tag. */
export const renderWorkersKey = (namespace: string): string => `${renderQueuePrefix(namespace)}:workers`;

/**
 * A render job on the wire: a page a fetch stage without the `render` role fetched and stored,
 * whose host it still holds (see docs/architecture.md, "Rendering"). Compact names stay here;
 * `decodeRenderJob` turns them into a `RenderJob`.
 */
export const renderJobDataSchema = z.object({
  /** The page as the process stage would take it (a handed-page payload: job, response, stored body). */
  p: z.string().min(2),
  /** The fetch attempt's token: the host's token at the gate, which the render stage takes over. */
  t: z.string().min(1),
  /** The host's due time after the page's own response (ms): the browser's first request waits for it. */
  due: z.number(),
  /** The host's health after the page's response, written back when the host is released. */
  h: z.object({ streak: z.number(), backoffMs: z.number(), blocks: z.number().optional(), level: z.number().optional() }).optional(),
  /** Why the fetch stage decided to render the page. */
  why: z.string(),
  /** The page is one of its host's render samples: the render stage reports its comparison to the crawl's shared learner. */
  s: z.literal(1).optional(),
  /**
   * The address group slots the fetch attempt held and left held with the host (group name; `s`:
   * the politeness group, whose next start waits for the host's delay): the render stage frees them.
   */
  a: z.array(z.object({ g: z.string().min(1), s: z.literal(1).optional() })).max(8).optional(),
});
export type RenderJobData = z.output<typeof renderJobDataSchema>;

/** A render job as its stage reads it. */
export interface RenderJob {
  /** The handed-page payload (decoded by the crawl lib). */
  page: string;
  token: string;
  hostDueAt: number;
  health?: { streak: number; backoffMs: number; blocks?: number; level?: number };
  reason: string;
  /** One of its host's samples (see `s`). */
  sample: boolean;
  /** The address group slots held with the host (see `a`). */
  addressSlots: Array<{ group: string; strict: boolean }>;
}

export const encodeRenderJob = (job: RenderJob): RenderJobData => ({
  p: job.page,
  t: job.token,
  due: job.hostDueAt,
  ...(job.health ? { h: job.health } : {}),
  why: job.reason,
  ...(job.sample ? { s: 1 as const } : {}),
  ...(job.addressSlots.length > 0 ? { a: job.addressSlots.map((slot) => ({ g: slot.group, ...(slot.strict ? { s: 1 as const } : {}) })) } : {}),
});

export const decodeRenderJob = (data: RenderJobData): RenderJob => ({
  page: data.p,
  token: data.t,
  hostDueAt: data.due,
  ...(data.h ? { health: data.h } : {}),
  reason: data.why,
  sample: data.s === 1,
  addressSlots: (data.a ?? []).map((slot) => ({ group: slot.g, strict: slot.s === 1 })),
});

/** Producer side of the `render` queue (a fetch stage without the `render` role). */
export class RenderQueue {
  readonly queue: Queue;

  constructor(connection: RedisClient, namespace: string) {
    this.queue = new Queue(RENDER_QUEUE, {
      connection,
      prefix: renderQueuePrefix(namespace),
      defaultJobOptions: { removeOnComplete: { count: 1000, age: 24 * 3600 }, removeOnFail: { count: 1000, age: 7 * 24 * 3600 } },
    });
  }

  /**
   * Adds the render of one fetch attempt's page. `id` names the attempt (lease and token): adding
   * it twice (a fetch job retried after the add) adds one job.
   */
  async add(id: string, job: RenderJob): Promise<void> {
    await this.queue.add('render', encodeRenderJob(job), { jobId: id.replace(/:/g, '_'), attempts: 5, backoff: { type: 'exponential', delay: 1000 } });
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

export interface RenderWorkerOptions {
  namespace: string;
  concurrency: number;
  /**
   * BullMQ lock duration: a render stage that dies has its jobs handed to another after about
   * this long, plus the stalled check's period (`renderStalledCheckMs`): they are redone from the
   * stored body, never fetched again.
   */
  lockMs: number;
  onError?: (error: Error) => void;
  /** A job whose data cannot be read: failed at once, counted and logged by the caller. */
  onInvalid?: (jobId: string, problem: string) => void;
}

/**
 * How often the render queue looks for jobs whose lock lapsed (BullMQ's stalled check): a third
 * of the lock, so a killed render stage's job goes back within a lock and a third of its death
 * rather than up to two locks. The check runs once per period for the whole queue (BullMQ keeps a
 * key for that), whatever the number of render workers, and moves only jobs whose lock is gone:
 * a live stage renews its locks every half lock, so checking more often never takes a job from it.
 */
export const renderStalledCheckMs = (lockMs: number): number => Math.max(500, Math.floor(lockMs / 3));

/**
 * Thrown by a render job's processor when the job cannot run yet (another delivery of it holds
 * the host until `at`): the job waits until then without counting as a failed attempt, so however
 * long a stalled delivery keeps the host, the job never runs out of attempts for it.
 */
export class RenderLater extends Error {
  constructor(
    readonly at: number,
    message: string,
  ) {
    super(message);
  }
}

/** One delivery of a render job, as its processor sees it. */
export interface RenderDelivery {
  /** BullMQ's lock token (a redelivery gets another). */
  token: string;
  signal?: AbortSignal;
  /** This delivery's try, 1-based (a delivery that stalled and came back is the same try). */
  attempt: number;
  /** Tries the job has; the last one should end the job rather than throw. */
  maxAttempts: number;
}

/** Consumer side: validates each job at the edge and runs `process`; an error is retried by BullMQ, a `RenderLater` waits. */
export class RenderWorker {
  readonly worker: Worker;

  constructor(connection: RedisClient, options: RenderWorkerOptions, process: (job: RenderJob, delivery: RenderDelivery) => Promise<Record<string, unknown>>) {
    this.worker = new Worker(
      RENDER_QUEUE,
      async (job: Job, token?: string, signal?: AbortSignal) => {
        const parsed = renderJobDataSchema.safeParse(job.data);
        if (!parsed.success) {
          const problem = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
          options.onInvalid?.(String(job.id), problem);
          throw new UnrecoverableError(`ERR_JOB_DATA_INVALID: ${problem}`);
        }
        // BullMQ's lock token names this delivery (a redelivery gets another).
        const delivery: RenderDelivery = { token: token ?? `${job.id}:${job.attemptsStarted}`, attempt: job.attemptsMade + 1, maxAttempts: job.opts.attempts ?? 1, ...(signal ? { signal } : {}) };
        try {
          return await process(decodeRenderJob(parsed.data), delivery);
        } catch (error) {
          if (!(error instanceof RenderLater) || token === undefined) throw error;
          await job.moveToDelayed(Math.max(Date.now() + 1, Math.ceil(error.at)), token);
          throw new DelayedError();
        }
      },
      {
        connection,
        prefix: renderQueuePrefix(options.namespace),
        concurrency: options.concurrency,
        lockDuration: options.lockMs,
        stalledInterval: renderStalledCheckMs(options.lockMs),
        maxStalledCount: 5,
        autorun: false,
      },
    );
    this.worker.on('error', (error) => options.onError?.(error));
  }

  run(): Promise<void> {
    return this.worker.run();
  }

  async ready(): Promise<void> {
    await this.worker.waitUntilReady();
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

/**
 * The render stages alive, each a member of a sorted set scored by the time its last heartbeat
 * keeps it alive until. A fetch stage asks before handing a page over: with none alive, the page
 * is processed unrendered instead of holding its host for a stage that is not there.
 */
export class RenderWorkers {
  private readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    namespace: string,
  ) {
    this.key = renderWorkersKey(namespace);
  }

  /** `member` is alive until `until` (ms); members dead for a while are dropped on the way. */
  async heartbeat(member: string, until: number, now: number): Promise<void> {
    await this.redis.multi().zadd(this.key, until, member).zremrangebyscore(this.key, '-inf', now - 3_600_000).exec();
  }

  async leave(member: string): Promise<void> {
    await this.redis.zrem(this.key, member);
  }

  /** How many render stages are alive at `now`. */
  async alive(now: number): Promise<number> {
    return this.redis.zcount(this.key, `(${now}`, '+inf');
  }
}
