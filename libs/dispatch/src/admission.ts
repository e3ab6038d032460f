import type { AdmissionStatus } from '@trawl/frontier';
import type { Logger } from '@trawl/telemetry';

/** What the watcher pauses and resumes: the scheduler's consumer of the `seeds` queue. */
export interface PausableConsumer {
  readonly paused: boolean;
  pause(): Promise<void>;
  resume(): Promise<void>;
}

export interface SeedsAdmissionDeps {
  /** Reads the frontier's queued count and decides (see `Admission.check`). */
  check: () => Promise<AdmissionStatus>;
  seeds: PausableConsumer;
  logger: Logger;
}

/**
 * Keeps a scheduler's `seeds` consumer in step with seed admission: paused while the frontier
 * holds more than the crawl can fetch (its jobs wait in the queue, nothing is lost), resumed once
 * it has drained below the resume mark. The consumer also checks before and after each job
 * (`SeedsWorker`'s `admit`); this watcher is what resumes it.
 */
export class SeedsAdmission {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private last: AdmissionStatus | undefined;

  constructor(
    private readonly deps: SeedsAdmissionDeps,
    private readonly options: { everyMs: number },
  ) {}

  /** The last decision seen (undefined before the first check). */
  get status(): AdmissionStatus | undefined {
    return this.last;
  }

  /** One check: pause or resume the consumer to match the decision. */
  async tick(): Promise<AdmissionStatus> {
    const status = await this.deps.check();
    const changed = this.last !== undefined && this.last.state !== status.state;
    this.last = status;
    if (status.state === 'paused' && !this.deps.seeds.paused) await this.deps.seeds.pause();
    else if (status.state === 'admitting' && this.deps.seeds.paused) await this.deps.seeds.resume();
    if (changed) {
      const fields = { queued: status.queued, maxQueued: status.maxQueued, resumeBelow: status.resumeBelow };
      if (status.state === 'paused') this.deps.logger.warn(fields, 'seed admission paused: the frontier holds TRAWL_FRONTIER_MAX_QUEUED URLs or more; seeds wait in the seeds queue');
      else this.deps.logger.info(fields, 'seed admission resumed: the frontier drained below its resume mark');
    }
    return status;
  }

  /** Checks every `everyMs` until `stop`. */
  start(): void {
    const loop = (): void => {
      if (this.stopped) return;
      this.running = this.tick()
        .then(() => undefined)
        .catch((error: unknown) => this.deps.logger.error({ err: error }, 'seed admission check failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(loop, this.options.everyMs);
        });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
