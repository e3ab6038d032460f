import { RenderWorker, type RenderWorkers } from '@trawl/queue';
import type { Redis } from '@trawl/redis';
import type { Logger } from '@trawl/telemetry';
import { processRenderJob, type RenderStageDeps } from './render-job.js';

export interface RenderStageOptions {
  /** A connection for BullMQ's blocking commands. */
  connection: Redis;
  namespace: string;
  /** Render jobs run at once (each waits for one of TRAWL_RENDER_CONCURRENCY's browser pages). */
  concurrency: number;
  /** BullMQ lock of a render job: a dead render stage's jobs go to another within this long and a third. */
  lockMs: number;
  /** The live render stages, and this one's name among them. */
  registry: Pick<RenderWorkers, 'heartbeat' | 'leave'>;
  member: string;
  /** This stage counts as alive this long after each heartbeat (it beats every third of it). */
  heartbeatTtlMs: number;
  logger: Logger;
}

/**
 * The render stage's consumer: the `render` queue's BullMQ worker, and a heartbeat in the registry
 * of live render stages, which fetch stages without a browser ask before handing a page over.
 */
export class RenderStage {
  private readonly worker: RenderWorker;
  private running: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: RenderStageDeps,
    private readonly options: RenderStageOptions,
  ) {
    this.worker = new RenderWorker(
      options.connection,
      {
        namespace: options.namespace,
        concurrency: options.concurrency,
        lockMs: options.lockMs,
        onError: (error) => options.logger.warn({ err: error }, 'render queue error'),
        onInvalid: (jobId, problem) => {
          deps.counters.add('processInvalid');
          options.logger.warn({ jobId, problem }, 'a render job\'s data cannot be read: failed');
        },
      },
      async (job, delivery) => ({
        ...(await processRenderJob(deps, job, {
          token: delivery.token,
          aliveMs: options.lockMs,
          last: delivery.attempt >= delivery.maxAttempts,
          ...(delivery.signal ? { signal: delivery.signal } : {}),
        })),
      }),
    );
  }

  /** Starts consuming and heartbeating. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = this.worker.run().catch((error: unknown) => this.options.logger.error({ err: error }, 'the render stage stopped'));
    await this.worker.ready();
    await this.beat();
    this.timer = setInterval(() => void this.beat(), Math.max(100, Math.floor(this.options.heartbeatTtlMs / 3)));
    this.timer.unref();
  }

  /** Leaves the registry first (no new page is handed to it), then lets the renders in hand finish. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.options.registry.leave(this.options.member).catch(() => undefined);
    await this.worker.close();
    await this.running;
  }

  private async beat(): Promise<void> {
    const now = this.deps.clock.now();
    await this.options.registry.heartbeat(this.options.member, now + this.options.heartbeatTtlMs, now).catch((error: unknown) => {
      this.options.logger.warn({ err: error }, 'could not heartbeat the render stage');
    });
  }
}
