import { isTrawlError, sleep, type TrawlError } from '@trawl/core';
import type { ProcessEntry, ProcessStream } from '@trawl/frontier';
import type { Logger } from '@trawl/telemetry';
import { type ProcessDeps, processEntry } from './process-entry.js';

/** How often a process stage looks for entries to claim from dead or failed ones, at most. */
const CLAIM_CHECK_MS = 1000;

export interface ProcessWorkerOptions {
  stream: Pick<ProcessStream, 'read' | 'claimStale' | 'touch'>;
  /** Partitions whose streams this process stage reads. */
  partitions: readonly number[];
  /** Pages processed at once. */
  concurrency: number;
  /**
   * An entry held this long by a process stage that neither recorded it nor said it still works
   * on it (it died, or it failed and left the entry for a retry) is claimed by another.
   */
  claimIdleMs: number;
  /** How long one read waits for new entries. */
  blockMs?: number;
  logger: Logger;
  /** A fault no retry can fix (the content disk full): this process stage stops, and this is called. */
  onFatal?: (error: TrawlError) => void;
}

/**
 * The process stage's consumer: reads the pages the fetch stage handed off, a few at a time
 * across its partitions, processes each (`processEntry`), says every third of the claim time that
 * it still works on the ones it holds, and now and then claims entries another process stage
 * left (it died, or a try failed). It never fetches.
 */
export class ProcessWorker {
  /** The entries in hand (being processed, or waiting in `queued` for a free slot), by `keyOf`. */
  private readonly inFlight = new Map<string, ProcessEntry>();
  /**
   * Entries read beyond the free slots (a read asks every stream for a share, see
   * `ProcessStream.read`): held and touched like the rest, started in order as slots free up, so
   * no more than `concurrency` pages are processed at once.
   */
  private readonly queued: ProcessEntry[] = [];
  private running: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;
  private partitions: readonly number[];
  private toucher: NodeJS.Timeout | null = null;
  private touching: Promise<void> | null = null;
  /** The first fatal error an entry met, if any. */
  fatal: TrawlError | null = null;

  constructor(
    private readonly deps: ProcessDeps,
    private readonly options: ProcessWorkerOptions,
  ) {
    this.partitions = [...options.partitions];
  }

  start(): void {
    if (this.running) return;
    // On a timer of its own, not between reads: a full hand (`concurrency` pages in flight) waits
    // for room, and pages slower than the claim time must not be claimed — and processed a second
    // time, beside this one — by another process stage meanwhile.
    this.toucher = setInterval(() => void this.touchHeld(), Math.max(50, Math.floor(this.options.claimIdleMs / 3)));
    this.toucher.unref();
    this.running = this.loop();
  }

  /** Reads exactly these partitions from now on (entries already held are finished). */
  consume(partitions: readonly number[]): void {
    this.partitions = [...partitions];
  }

  get held(): number {
    return this.inFlight.size;
  }

  /** Stops reading; waits up to `timeoutMs` for the pages in hand (the rest are claimed by others later). */
  async stop(timeoutMs: number): Promise<{ drained: boolean }> {
    this.stopping = true;
    this.wake?.();
    const deadline = Date.now() + timeoutMs;
    while (this.inFlight.size > 0 && Date.now() < deadline) await sleep(20);
    await this.running?.catch(() => undefined);
    if (this.toucher) clearInterval(this.toucher);
    this.toucher = null;
    await this.touching;
    return { drained: this.inFlight.size === 0 };
  }

  private async loop(): Promise<void> {
    const { options } = this;
    const blockMs = options.blockMs ?? 500;
    let lastClaim = 0;
    while (!this.stopping && !this.fatal) {
      const room = options.concurrency - this.inFlight.size;
      if (room <= 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      try {
        const now = Date.now();
        // Often enough that entries a dead worker's process stage held, made stale at once when
        // its heartbeat lapses (ProcessStream.expedite), are taken within a second.
        if (now - lastClaim >= Math.min(CLAIM_CHECK_MS, options.claimIdleMs / 2)) {
          lastClaim = now;
          for (const partition of this.partitions) for (const entry of await options.stream.claimStale(partition, options.claimIdleMs, room)) this.run(entry);
        }
        const fresh = await options.stream.read(this.partitions, options.concurrency - this.inFlight.size, blockMs);
        for (const entry of fresh) this.run(entry);
      } catch (error) {
        options.logger.warn({ err: error }, 'could not read the process streams');
        await sleep(500);
      }
    }
  }

  private run(entry: ProcessEntry): void {
    const key = keyOf(entry);
    if (this.inFlight.has(key)) return;
    this.inFlight.set(key, entry);
    // The entries in hand but not waiting are the ones being processed (this one included).
    if (this.inFlight.size - this.queued.length > this.options.concurrency) this.queued.push(entry);
    else this.process(entry, key);
  }

  private process(entry: ProcessEntry, key: string): void {
    processEntry(this.deps, entry)
      .catch((error: unknown) => {
        if (isTrawlError(error) && error.action === 'fatal') {
          if (!this.fatal) {
            this.fatal = error;
            this.options.logger.fatal({ err: error }, 'fatal error: this process stage stops taking pages');
            this.options.onFatal?.(error);
          }
        } else this.options.logger.error({ err: error, entry: entry.id }, 'processing a page failed unexpectedly; it is claimed again later');
      })
      .finally(() => {
        this.inFlight.delete(key);
        const next = this.fatal ? undefined : this.queued.shift();
        if (next) this.process(next, keyOf(next));
        this.wake?.();
      });
  }

  /** Says this process stage still works on the entries it holds (one call at a time; a failed one is logged, the next tries again). */
  private touchHeld(): Promise<void> {
    this.touching ??= this.touchAll()
      .catch((error: unknown) => this.options.logger.warn({ err: error }, 'could not say the process stage still works on its pages'))
      .finally(() => (this.touching = null));
    return this.touching;
  }

  private async touchAll(): Promise<void> {
    const byPartition = new Map<number, string[]>();
    for (const entry of this.inFlight.values()) {
      const ids = byPartition.get(entry.partition) ?? [];
      ids.push(entry.id);
      byPartition.set(entry.partition, ids);
    }
    await Promise.all([...byPartition].map(([partition, ids]) => this.options.stream.touch(partition, ids)));
  }
}

/**
 * An entry's key among those in hand: its partition and its id, since each partition's stream
 * numbers its entries itself and two partitions' pages handed off in the same millisecond share
 * an id (one keyed by id alone was dropped, and waited a whole claim time to be processed).
 */
const keyOf = (entry: ProcessEntry): string => `${entry.partition}/${entry.id}`;
