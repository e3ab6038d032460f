import { Batcher, PROCESS_BATCH_WAIT_MS } from '@trawl/core';
import { type Database, Freshness, pageValidators, type PageRecord, type UrlState } from '@trawl/db';
import type { Frontier } from '@trawl/frontier';
import { observationOf, planRecrawl, type RecrawlOptions } from '@trawl/recrawl';
import type { FetchRecord } from './record.js';

/** The frontier lease a record finishes: acknowledged once the record is written. */
export interface LeaseRef {
  partition: number;
  leaseId: string;
  /** The page's process stream entry, acknowledged (and deleted) with the lease. */
  entry?: string;
}

/**
 * Writes fetch outcomes to PostgreSQL in batches across jobs: reads the pages' stored state once
 * per batch, plans each page's next visit from what this one observed (changed, unchanged — a 304
 * included —, failed, gone…), carries over what a visit that did not read the content leaves
 * standing (duplicate verdict, title, text), and upserts everything in one statement. Then, in
 * the same flush, it acknowledges the leases of the records written (one ack call per partition
 * per batch, never before the batch's rows are in PostgreSQL): a job's `add` resolves once its
 * row is written and its lease acknowledged. `recrawl` gives the crawl's re-crawl options, or
 * null when re-crawling is off (pages then get no due time).
 */
export class Records {
  private readonly batcher: Batcher<{ record: FetchRecord; lease?: LeaseRef }, string | null>;
  private readonly freshness: Freshness;

  constructor(
    private readonly db: Database,
    private readonly recrawl: () => Promise<RecrawlOptions | null>,
    /** Where written records' leases are acknowledged. */
    private readonly frontier: Pick<Frontier, 'ack'>,
    options: { maxBatch: number; maxWaitMs: number } = { maxBatch: 500, maxWaitMs: PROCESS_BATCH_WAIT_MS },
  ) {
    this.freshness = new Freshness(db.pool, db.options.schema);
    this.batcher = new Batcher({ maxItems: options.maxBatch, maxWaitMs: options.maxWaitMs, run: (items) => this.run(items), concurrency: 2 });
  }

  /**
   * Writes the record, then acknowledges `lease` (if given); resolves with null, or with the
   * reason PostgreSQL refused this one record (the rest of its batch is written; its lease is
   * not acknowledged). A late record that a newer one already superseded resolves with null
   * too, its lease acknowledged: there is nothing left to do for it. A failed ack fails the
   * batch's jobs like a failed write (their rows are written: a repeat finds them recorded).
   */
  add(record: FetchRecord, lease?: LeaseRef): Promise<string | null> {
    return this.batcher.addOne({ record, lease });
  }

  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async run(batch: { record: FetchRecord; lease?: LeaseRef }[]): Promise<(string | null)[]> {
    const reasons = await this.write(batch.map((b) => b.record));
    const byPartition = new Map<number, { ids: string[]; entries: string[] }>();
    batch.forEach(({ lease }, i) => {
      if (!lease || reasons[i] !== null) return;
      let acks = byPartition.get(lease.partition);
      if (!acks) byPartition.set(lease.partition, (acks = { ids: [], entries: [] }));
      acks.ids.push(lease.leaseId);
      if (lease.entry !== undefined) acks.entries.push(lease.entry);
    });
    // One call per partition (each its own cluster slot), all at once: one round trip on a
    // single Redis, where ioredis pipelines them.
    await Promise.all([...byPartition].map(([partition, acks]) => this.frontier.ack(partition, acks.ids, acks.entries)));
    return reasons;
  }

  private async write(items: FetchRecord[]): Promise<(string | null)[]> {
    const [states, options] = await Promise.all([this.freshness.pageStates(items.map((r) => r.hash)), this.recrawl()]);
    const rows: PageRecord[] = items.map((record) => {
      const stored = states.get(record.hash.toString('latin1')) ?? null;
      // A visit that did not read the content leaves what was known about it standing.
      const carried = { ...record, dedup: record.dedup ?? stored?.dedup, text: record.text ?? stored?.text };
      if (!options) return { ...carried, changeFrequencyS: null, lastChangedAt: stored?.lastChangedAt ?? null, nextCrawlAt: null, recrawl: null };
      const observation =
        record.state === 'skipped'
          ? 'refused'
          : observationOf({ status: record.httpStatus, contentHash: record.contentHash, previousHash: stored?.contentHash ?? null, hasLocation: record.redirectTo !== null });
      const plan = planRecrawl(stored, observation, record.fetchedAt, options);
      const { lastChangedAt, ...stats } = plan.state;
      return {
        ...carried,
        changeFrequencyS: plan.changeIntervalS === null ? null : Math.round(Math.min(plan.changeIntervalS, 2 ** 31 - 1)),
        lastChangedAt,
        nextCrawlAt: plan.nextCrawlAt,
        recrawl: stats,
      };
    });
    const { rejected } = await this.db.recordPages(rows);
    const reasons: (string | null)[] = items.map(() => null);
    for (const r of rejected) reasons[r.index] = r.reason;
    return reasons;
  }
}

/**
 * The validators a re-crawl's conditional GET sends (`If-None-Match`, `If-Modified-Since`),
 * looked up in batches across jobs.
 */
export class Validators {
  private readonly batcher: Batcher<Buffer, { etag: string | null; lastModified: string | null } | null>;

  constructor(db: Database, options: { maxBatch: number; maxWaitMs: number } = { maxBatch: 500, maxWaitMs: 5 }) {
    this.batcher = new Batcher({
      maxItems: options.maxBatch,
      maxWaitMs: options.maxWaitMs,
      run: async (hashes) => {
        const found = await pageValidators(db.pool, db.options.schema, hashes);
        return hashes.map((h) => found.get(h.toString('latin1')) ?? null);
      },
    });
  }

  async headers(hash: Buffer): Promise<Record<string, string> | undefined> {
    const v = await this.batcher.addOne(hash);
    if (!v) return undefined;
    const headers: Record<string, string> = {};
    if (v.etag) headers['if-none-match'] = v.etag;
    if (v.lastModified) headers['if-modified-since'] = v.lastModified;
    return Object.keys(headers).length > 0 ? headers : undefined;
  }

  drain(): Promise<void> {
    return this.batcher.drain();
  }
}

/**
 * What PostgreSQL says about URLs a job may be repeating (`urls.state`), looked up in batches
 * across jobs: a job whose URL is recorded since it was queued does not fetch it again.
 */
export class UrlStates {
  private readonly batcher: Batcher<Buffer, UrlState | null>;

  constructor(db: Pick<Database, 'urlStates'>, options: { maxBatch: number; maxWaitMs: number } = { maxBatch: 500, maxWaitMs: 5 }) {
    this.batcher = new Batcher({
      maxItems: options.maxBatch,
      maxWaitMs: options.maxWaitMs,
      run: async (hashes) => {
        const found = await db.urlStates(hashes);
        return hashes.map((h) => found.get(h.toString('latin1')) ?? null);
      },
    });
  }

  state(hash: Buffer): Promise<UrlState | null> {
    return this.batcher.addOne(hash);
  }

  drain(): Promise<void> {
    return this.batcher.drain();
  }
}

interface AckItem {
  leaseId: string | null;
  entry: string | null;
}

/**
 * Acknowledges finished leases (and process stream entries) in batches, one script call per
 * partition per batch: for work that finishes without a record (a URL found recorded already, a
 * sitemap, an entry that could not be read); a record's lease is acknowledged by `Records` as it
 * is written.
 */
export class Acks {
  private readonly batchers = new Map<number, Batcher<AckItem, void>>();

  constructor(
    private readonly frontier: Pick<Frontier, 'ack'>,
    private readonly options: { maxBatch: number; maxWaitMs: number } = { maxBatch: 500, maxWaitMs: 5 },
  ) {}

  /** Acknowledges a lease (null: none), and the page's process stream entry with it when given. */
  async ack(partition: number, leaseId: string | null, entry?: string): Promise<void> {
    let batcher = this.batchers.get(partition);
    if (!batcher) {
      batcher = new Batcher<AckItem, void>({
        maxItems: this.options.maxBatch,
        maxWaitMs: this.options.maxWaitMs,
        run: async (items) => {
          const ids = items.flatMap((i) => (i.leaseId === null ? [] : [i.leaseId]));
          const entries = items.flatMap((i) => (i.entry === null ? [] : [i.entry]));
          await this.frontier.ack(partition, ids, entries);
          return items.map(() => undefined);
        },
      });
      this.batchers.set(partition, batcher);
    }
    await batcher.addOne({ leaseId, entry: entry ?? null });
  }

  async drain(): Promise<void> {
    await Promise.all([...this.batchers.values()].map((b) => b.drain()));
  }
}
