import type { TrawlError } from '@trawl/core';
import { closePipeline, type ProcessWorker, type SharedPipeline } from '@trawl/crawl/process';
import type { CrawlWorker, RenderStage } from '@trawl/crawl';
import type { Runtime } from '@trawl/runtime';
import type { ProcessThread } from './process-on-thread.js';

/** A worker process's stages (TRAWL_WORKER_ROLES). */
export type WorkerRole = 'fetch' | 'process' | 'render';

/**
 * A worker process's stages, as TRAWL_WORKER_ROLES says: the fetch stage (one BullMQ consumer
 * per partition it is given), the process stage (reading every partition's process stream, in a
 * consumer group shared with every other process stage), or both — which share this process's
 * batchers, its analysis thread, and the bodies just fetched (read back without the store).
 */
export class WorkerStages {
  constructor(
    readonly deps: SharedPipeline,
    readonly fetch: CrawlWorker | null,
    /** The process stage on this event loop. */
    readonly process: ProcessWorker | null,
    private readonly logger: Runtime['logger'],
    /** The process stage on a thread of its own (TRAWL_PROCESS_THREAD). */
    readonly processThread: ProcessThread | null = null,
    /** The render stage (roles with `render` and without `fetch`). */
    readonly render: RenderStage | null = null,
    /** What closes with the stages (the render queue a fetch stage without a browser adds to). */
    private readonly closers: readonly (() => Promise<void>)[] = [],
  ) {}

  start(): void {
    this.fetch?.start();
    this.process?.start();
    this.processThread?.start().catch(() => undefined);
    this.render?.start().catch((error: unknown) => this.logger.error({ err: error }, 'the render stage could not start'));
  }

  /** The partitions the fetch stage consumes from now on (the process stage reads them all). */
  consume(partitions: readonly number[]): void {
    this.fetch?.consume(partitions);
  }

  get partitions(): number[] {
    return this.fetch?.partitions ?? [];
  }

  /** The first fatal error either stage met, if any. */
  get fatal(): TrawlError | null {
    return this.fetch?.fatal ?? this.process?.fatal ?? this.processThread?.fatal ?? null;
  }

  /**
   * Resolves once the fetch stage consumes and the process stage can take pages: its analysis
   * thread, or the process thread, has started. Loading the process thread's modules takes a
   * second or two; a fetch stage that fetched meanwhile would leave every page it fetched
   * waiting, and every host waiting on its first page's links for its next URL, well past the
   * host's delay. (A process thread that cannot start is fatal: `fatal` says so.)
   */
  async ready(): Promise<void> {
    await Promise.all([
      this.fetch?.ready(),
      this.process ? this.deps.analyzer?.ready() : undefined,
      this.processThread?.start().catch(() => undefined),
      this.render?.start(),
    ]);
  }

  /**
   * Stops fetching first (nothing new is handed off), then lets the process stage finish the
   * pages it holds (the rest wait on their streams for another process stage, or the next start),
   * then flushes what the stages share. Up to `timeoutMs` in all.
   */
  async stop(timeoutMs: number): Promise<{ drained: boolean }> {
    const until = Date.now() + timeoutMs;
    const fetched = (await this.fetch?.stop(timeoutMs)) ?? { drained: true };
    // The renders in hand finish and hand their pages on (a render stage leaves the registry first).
    await this.render?.stop();
    const left = Math.max(0, until - Date.now());
    const [processed, threaded] = await Promise.all([this.process?.stop(left) ?? { drained: true }, this.processThread?.stop(left) ?? { drained: true }]);
    await closePipeline(this.deps, this.logger);
    await Promise.all(this.closers.map((close) => close().catch(() => undefined)));
    return { drained: fetched.drained && processed.drained && threaded.drained };
  }
}
