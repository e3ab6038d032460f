import { Batcher } from '@trawl/core';
import type { Database, PageRecord } from '@trawl/db';
import type { Frontier } from '@trawl/frontier';
import { nextCrawl } from '@trawl/recrawl';

export type FetchRecord = Omit<PageRecord, 'changeFrequencyS' | 'lastChangedAt' | 'nextCrawlAt'>;

/**
 * Writes fetch outcomes to PostgreSQL in batches across jobs: reads the pages' history once
 * per batch, computes each page's next crawl time (the re-crawl EMA), and upserts. A job awaits
 * its own row's write before its lease is acknowledged.
 */
export class Records {
  private readonly batcher: Batcher<FetchRecord, void>;

  constructor(
    private readonly db: Database,
    options: { maxBatch: number; maxWaitMs: number } = { maxBatch: 500, maxWaitMs: 10 },
  ) {
    this.batcher = new Batcher({ maxItems: options.maxBatch, maxWaitMs: options.maxWaitMs, run: (items) => this.run(items), concurrency: 2 });
  }

  async add(record: FetchRecord): Promise<void> {
    await this.batcher.addOne(record);
  }

  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async run(items: FetchRecord[]): Promise<void[]> {
    const history = await this.db.pageHistory(items.map((r) => r.hash));
    const rows: PageRecord[] = items.map((record) => {
      const previous = history.get(record.hash.toString('latin1')) ?? null;
      const fetchedPage = record.state === 'done' && record.httpStatus !== null && record.httpStatus >= 200 && record.httpStatus < 300;
      if (!fetchedPage) {
        return { ...record, changeFrequencyS: previous?.changeFrequencyS ?? null, lastChangedAt: previous?.lastChangedAt ?? null, nextCrawlAt: null };
      }
      const decision = nextCrawl(previous, record.contentHash, record.fetchedAt);
      return { ...record, changeFrequencyS: decision.changeFrequencyS, lastChangedAt: decision.lastChangedAt, nextCrawlAt: decision.nextCrawlAt };
    });
    await this.db.recordPages(rows);
    return items.map(() => undefined);
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
