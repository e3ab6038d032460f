import { Batcher } from '@trawl/core';
import { type Database, Freshness, pageValidators, type PageRecord, type RecrawlUpdate } from '@trawl/db';
import type { Frontier } from '@trawl/frontier';
import { observationOf, planRecrawl, type RecrawlOptions } from '@trawl/recrawl';

export type FetchRecord = Omit<PageRecord, 'changeFrequencyS' | 'lastChangedAt' | 'nextCrawlAt'>;

/**
 * Writes fetch outcomes to PostgreSQL in batches across jobs: reads the pages' re-crawl state
 * once per batch, plans each page's next visit from what this one observed (changed, unchanged —
 * a 304 included —, failed, gone…), and upserts. A job awaits its own row's write before its
 * lease is acknowledged. `recrawl` gives the crawl's re-crawl options, or null when re-crawling
 * is off (pages then get no due time).
 */
export class Records {
  private readonly batcher: Batcher<FetchRecord, void>;
  private readonly freshness: Freshness;

  constructor(
    private readonly db: Database,
    private readonly recrawl: () => Promise<RecrawlOptions | null>,
    options: { maxBatch: number; maxWaitMs: number } = { maxBatch: 500, maxWaitMs: 10 },
  ) {
    this.freshness = new Freshness(db.pool, db.options.schema);
    this.batcher = new Batcher({ maxItems: options.maxBatch, maxWaitMs: options.maxWaitMs, run: (items) => this.run(items), concurrency: 2 });
  }

  async add(record: FetchRecord): Promise<void> {
    await this.batcher.addOne(record);
  }

  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async run(items: FetchRecord[]): Promise<void[]> {
    const [states, options] = await Promise.all([this.freshness.pageStates(items.map((r) => r.hash)), this.recrawl()]);
    const updates: RecrawlUpdate[] = [];
    const rows: PageRecord[] = items.map((record) => {
      const stored = states.get(record.hash.toString('latin1')) ?? null;
      if (!options) return { ...record, changeFrequencyS: null, lastChangedAt: stored?.lastChangedAt ?? null, nextCrawlAt: null };
      const observation =
        record.state === 'skipped'
          ? 'refused'
          : observationOf({ status: record.httpStatus, contentHash: record.contentHash, previousHash: stored?.contentHash ?? null, hasLocation: record.redirectTo !== null });
      const plan = planRecrawl(stored, observation, record.fetchedAt, options);
      updates.push({ hash: record.hash, ...plan.state, changeFrequencyS: plan.changeIntervalS, nextCrawlAt: plan.nextCrawlAt });
      return {
        ...record,
        changeFrequencyS: plan.changeIntervalS === null ? null : Math.round(Math.min(plan.changeIntervalS, 2 ** 31 - 1)),
        lastChangedAt: plan.state.lastChangedAt,
        nextCrawlAt: plan.nextCrawlAt,
      };
    });
    await this.db.recordPages(rows);
    await this.freshness.savePageStates(updates);
    return items.map(() => undefined);
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

/** Acknowledges finished leases in batches, one script call per partition per batch. */
export class Acks {
  private readonly batchers = new Map<number, Batcher<string, void>>();

  constructor(
    private readonly frontier: Frontier,
    private readonly options: { maxBatch: number; maxWaitMs: number } = { maxBatch: 500, maxWaitMs: 5 },
  ) {}

  async ack(partition: number, leaseId: string): Promise<void> {
    let batcher = this.batchers.get(partition);
    if (!batcher) {
      batcher = new Batcher<string, void>({
        maxItems: this.options.maxBatch,
        maxWaitMs: this.options.maxWaitMs,
        run: async (ids) => {
          await this.frontier.ack(partition, ids);
          return ids.map(() => undefined);
        },
      });
      this.batchers.set(partition, batcher);
    }
    await batcher.addOne(leaseId);
  }

  async drain(): Promise<void> {
    await Promise.all([...this.batchers.values()].map((b) => b.drain()));
  }
}
