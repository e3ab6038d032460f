/**
 * Collects items from many callers and hands them to one function in batches: a flush happens
 * when `maxItems` are waiting or `maxWaitMs` after the first item arrived, whichever is first.
 * Each caller's promise settles with its own items' results, so a job can await the durable
 * write of exactly what it added. This is how per-page work becomes one round trip per batch.
 */
export interface BatcherOptions<T, R> {
  maxItems: number;
  maxWaitMs: number;
  /** Must return one result per item, in order. */
  run: (items: T[]) => Promise<R[]>;
  /** How many flushes may run at once (default 1: batches are written in order). */
  concurrency?: number;
  /**
   * How long urgent items (`add`'s option) wait for company: 0, the default, flushes them once
   * the current task ends, with whatever else is waiting.
   */
  urgentWaitMs?: number;
}

/**
 * How long the process stage's batches (page records, duplicate lookups, discovered URLs) wait
 * for company before they run. Each batch costs a PostgreSQL statement or two and a Redis round
 * trip whatever its size, so at a crawl's usual tens to hundreds of pages per second a few
 * milliseconds makes batches of one page. 50 ms gathers several pages per statement; a page's
 * own work (parsing, hashing, storing) takes longer than the wait anyway, and the stage works on
 * many pages at once, so it costs no throughput. Measured on the realistic benchmark web (one
 * `trawl crawl`, 500 hosts): 5–10 ms → 50 ms cut PostgreSQL transactions per page from 1.25 to
 * 0.50 and the crawler's CPU per page by about 7 % (docs/perf-log.md); 100 ms gained nothing
 * more, and 200 ms began to limit the stage.
 */
export const PROCESS_BATCH_WAIT_MS = 50;

/**
 * How long the links of an urgent page (its host has nothing else queued and waits on them) wait
 * for company before their discovery batch runs. Not at once: on a broad crawl most hosts run dry
 * often, and batches of one page each multiplied the PostgreSQL statements per page (0.33 → 0.56
 * on the realistic benchmark web). A few milliseconds gather the urgent pages of the moment,
 * against a host delay of hundreds.
 */
export const URGENT_BATCH_WAIT_MS = 10;

interface Pending<T, R> {
  items: T[];
  urgent: boolean;
  resolve: (results: R[]) => void;
  reject: (error: unknown) => void;
}

export class Batcher<T, R = void> {
  private queue: Pending<T, R>[] = [];
  private queuedItems = 0;
  /** Of `queue`, how many (at its head) are urgent. */
  private urgentQueued = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private running = 0;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(private readonly options: BatcherOptions<T, R>) {}

  /**
   * Adds items; resolves with their results once the batch holding them has run. `urgent`: they
   * go ahead of the items waiting, are flushed after `urgentWaitMs` instead of `maxWaitMs`, and
   * may run in one batch beyond `concurrency` rather than wait for a running batch to end.
   */
  add(items: T[], options: { urgent?: boolean } = {}): Promise<R[]> {
    if (items.length === 0) return Promise.resolve([]);
    const urgent = options.urgent === true;
    return new Promise<R[]>((resolve, reject) => {
      const pending = { items, urgent, resolve, reject };
      if (urgent) this.queue.splice(this.urgentQueued++, 0, pending);
      else this.queue.push(pending);
      this.queuedItems += items.length;
      this.flushSoon(this.waitMs());
    });
  }

  async addOne(item: T, options: { urgent?: boolean } = {}): Promise<R> {
    const [result] = await this.add([item], options);
    return result as R;
  }

  /** Runs everything waiting now and resolves when no batch is running. */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.running > 0) {
      if (this.queue.length > 0) this.flushNow();
      if (this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
  }

  get size(): number {
    return this.queuedItems;
  }

  /** How soon what is waiting should be flushed. */
  private waitMs(): number {
    if (this.queuedItems >= this.options.maxItems) return 0;
    return this.urgentQueued > 0 ? (this.options.urgentWaitMs ?? 0) : this.options.maxWaitMs;
  }

  /** Flushes within `delayMs` (a flush already due sooner stands). */
  private flushSoon(delayMs: number): void {
    if (delayMs === 0) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      queueMicrotask(() => this.flushNow());
      return;
    }
    const at = Date.now() + delayMs;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.flushNow(), delayMs);
  }

  private flushNow(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const limit = this.options.concurrency ?? 1;
    // Urgent items do not wait for a running batch: they may take one batch beyond the limit.
    while (this.queue.length > 0 && this.running < limit + (this.urgentQueued > 0 ? 1 : 0)) {
      const batch: Pending<T, R>[] = [];
      let count = 0;
      while (this.queue.length > 0 && count < this.options.maxItems) {
        const next = this.queue.shift() as Pending<T, R>;
        if (next.urgent) this.urgentQueued -= 1;
        batch.push(next);
        count += next.items.length;
      }
      this.queuedItems -= count;
      void this.runBatch(batch);
    }
  }

  private async runBatch(batch: Pending<T, R>[]): Promise<void> {
    this.running += 1;
    const items = batch.flatMap((pending) => pending.items);
    try {
      const results = await this.options.run(items);
      if (results.length !== items.length) {
        throw new Error(`batch returned ${results.length} results for ${items.length} items`);
      }
      let offset = 0;
      for (const pending of batch) {
        pending.resolve(results.slice(offset, offset + pending.items.length));
        offset += pending.items.length;
      }
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    } finally {
      this.running -= 1;
      if (this.queue.length > 0) this.flushSoon(this.waitMs());
      if (this.running === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }
}
