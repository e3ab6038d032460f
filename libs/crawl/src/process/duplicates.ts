import { Batcher, PROCESS_BATCH_WAIT_MS } from '@trawl/core';
import type { FirstCapture, IndexedFingerprint, NearDupIndex } from '@trawl/db';
import { classifyBatch, type DuplicateVerdict, type NearCandidate } from '@trawl/dedup';

/** One fetched body to classify. */
export interface DuplicateQuery {
  urlHash: Buffer;
  url: string;
  /** SimHash of the page's visible text; null for a body with no text (not HTML, or no words). */
  simhash: bigint | null;
  /** sha256 of the body. */
  contentHash: string;
  /** When this fetch started (epoch ms): the capture time of a body seen here first. */
  fetchedAt: number;
  /** The page was fetched before: its fingerprint may be in the index from that visit. */
  recrawl: boolean;
  /** TRAWL_NEAR_DUP_DISTANCE, from the crawl policy. */
  maxDistance: number;
}

/** Where a body was captured first. */
export interface Capture {
  url: string;
  capturedAt: number;
}

export interface DuplicateAnswer {
  verdict: DuplicateVerdict | null;
  /** The URL of `verdict.of`: the first page of the cluster. */
  ofUrl: string | null;
  /**
   * This body was captured before: by the first page that had it (an exact duplicate), or by
   * this page itself on an earlier visit (an unchanged re-crawl). Null: first seen here.
   */
  earlier: Capture | null;
}

interface Lookups {
  stored: ReadonlyMap<string, FirstCapture>;
  /** Band matches per query (empty for a query without a fingerprint). */
  candidates: NearCandidate[][];
  maxDistance: number;
}

interface Classified {
  answers: DuplicateAnswer[];
  entries: IndexedFingerprint[];
  /** Cluster heads not named in memory: looked up in `urls`. */
  unnamed: Buffer[];
}

export type DuplicateIndex = Pick<NearDupIndex, 'lookup' | 'index' | 'urlsOf'>;

export interface DuplicatesOptions {
  maxBatch: number;
  maxWaitMs: number;
  /** Bodies first seen by this process remembered until their pages' records are surely written. */
  rememberBodies: number;
}

/**
 * Classifies fetched bodies against what the crawl already holds, in batches shared by a
 * process's jobs: an identical body (sha256) makes an exact duplicate of the first page that had
 * it; else a SimHash within the policy's distance of an indexed page makes a near-duplicate of
 * that cluster's first page. Batches run one at a time, and each indexes its new cluster heads
 * before the next one looks up, so two copies fetched at once are still recognized
 * (`classifyBatch` handles copies within one batch).
 *
 * A body's first page is found in `crawled_pages`, which its record reaches some milliseconds
 * after classification; bodies this process saw first are remembered meanwhile, so a copy
 * fetched in between is not taken for a first. Likewise a batch's new cluster heads count as
 * indexed, for every batch whose lookups may not see their rows, from the moment they are
 * classified: so batches classify strictly one after another, while their lookups and writes
 * overlap (a job waits for its own batch's writes only). Two processes fetching copies
 * at the same moment may both take their own for the first (the cluster then has two heads;
 * later copies join the earlier one).
 */
export class Duplicates {
  private readonly batcher: Batcher<DuplicateQuery, DuplicateAnswer>;
  /** Bodies first seen here, by content hash, oldest first. */
  private readonly recent = new Map<string, { urlHash: Buffer } & Capture>();
  /** Their URLs by url_hash (latin1): a near-duplicate names its cluster's first page without a query. */
  private readonly recentUrls = new Map<string, string>();
  /**
   * Cluster heads this process classified whose index rows a batch's lookups may not see:
   * `committed` is the write count once their rows were written (null: not yet).
   */
  private heads: { head: NearCandidate; committed: number | null }[] = [];
  /** Index writes finished so far. */
  private writes = 0;
  /** The write count each batch in flight saw when it sent its lookups. */
  private readonly lookupsSince = new Map<object, number>();
  /** Batches classify one at a time, in order: each waits for this. */
  private classified: Promise<void> = Promise.resolve();

  constructor(
    private readonly index: DuplicateIndex,
    private readonly now: () => number,
    private readonly options: DuplicatesOptions = { maxBatch: 200, maxWaitMs: PROCESS_BATCH_WAIT_MS, rememberBodies: 10_000 },
  ) {
    // Several batches may be in flight: their lookups and writes overlap, their classification does not.
    this.batcher = new Batcher({ maxItems: options.maxBatch, maxWaitMs: options.maxWaitMs, run: (queries) => this.run(queries), concurrency: 4 });
  }

  classify(query: DuplicateQuery): Promise<DuplicateAnswer> {
    return this.batcher.addOne(query);
  }

  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async run(queries: DuplicateQuery[]): Promise<DuplicateAnswer[]> {
    const batch = {};
    // Rows written before the lookups are sent are in their answers; later ones come from memory.
    this.lookupsSince.set(batch, this.writes);
    const lookups = this.lookup(queries).then(
      (found) => ({ found }),
      (error: unknown) => ({ error }),
    );
    const previous = this.classified;
    let done!: () => void;
    this.classified = new Promise((resolve) => (done = resolve));
    let classified: Classified;
    let heads: { head: NearCandidate; committed: number | null }[] = [];
    try {
      const looked = await lookups;
      await previous;
      if ('error' in looked) throw looked.error;
      classified = this.classifyInOrder(queries, looked.found, this.lookupsSince.get(batch) as number);
      heads = classified.entries.flatMap((e) => (e.simhash === null ? [] : [{ head: { urlHash: e.urlHash, simhash: e.simhash, indexedAt: this.now() }, committed: null }]));
      this.heads.push(...heads);
    } catch (error) {
      this.lookupsSince.delete(batch);
      throw error;
    } finally {
      done();
    }
    try {
      const [names] = await Promise.all([this.index.urlsOf(classified.unnamed), classified.entries.length > 0 ? this.index.index(classified.entries) : null]);
      this.writes += 1;
      for (const h of heads) h.committed = this.writes;
      for (const answer of classified.answers) if (answer.verdict !== null && answer.ofUrl === null) answer.ofUrl = names.get(answer.verdict.of.toString('latin1')) ?? null;
      return classified.answers;
    } catch (error) {
      // Not indexed: the batch's jobs are retried and classified again.
      this.heads = this.heads.filter((h) => !heads.includes(h));
      throw error;
    } finally {
      this.lookupsSince.delete(batch);
      // Heads whose rows every batch in flight can see need no memory any more.
      const oldest = Math.min(this.writes, ...this.lookupsSince.values());
      this.heads = this.heads.filter((h) => h.committed === null || h.committed > oldest);
    }
  }

  private async lookup(queries: DuplicateQuery[]): Promise<Lookups> {
    // One distance per batch: the policy's (queries differ only while a new policy spreads).
    const maxDistance = (queries[queries.length - 1] as DuplicateQuery).maxDistance;
    const withText = queries.flatMap((q, i) => (q.simhash === null ? [] : [i]));
    // Body hashes and fingerprints in one statement: a batch is a few pages, so its round
    // trips, not its rows, are what it costs.
    const { first, near } = await this.index.lookup(
      queries.map((q) => q.contentHash),
      withText.map((i) => ({ simhash: (queries[i] as DuplicateQuery).simhash as bigint, exclude: (queries[i] as DuplicateQuery).urlHash })),
      maxDistance,
    );
    const candidates: NearCandidate[][] = queries.map(() => []);
    withText.forEach((i, k) => (candidates[i] = near[k] ?? []));
    return { stored: first, candidates, maxDistance };
  }

  /** Classification of one batch, once the batches before it are classified. */
  private classifyInOrder(queries: DuplicateQuery[], found: Lookups, writesSeen: number): Classified {
    const firsts = new Map<string, { urlHash: Buffer } & Capture>();
    for (const q of queries) {
      const known = found.stored.get(q.contentHash);
      const first = known ? { urlHash: known.urlHash, url: known.url, capturedAt: known.capturedAt.getTime() } : this.recent.get(q.contentHash);
      if (first) firsts.set(q.contentHash, first);
    }
    const unseen = this.heads.filter((h) => h.committed === null || h.committed > writesSeen).map((h) => h.head);
    const candidates = unseen.length === 0 ? found.candidates : found.candidates.map((c, i) => ((queries[i] as DuplicateQuery).simhash === null ? c : [...c, ...unseen]));
    const verdicts = classifyBatch(
      queries.map((q) => ({ urlHash: q.urlHash, simhash: q.simhash, contentHash: q.contentHash })),
      { firstWithContent: firsts, candidates },
      found.maxDistance,
      this.now(),
    );

    // Only a cluster's first page is indexed; a re-crawled page that is now someone's duplicate
    // (or has no text any more) leaves the index.
    const entries = queries.flatMap((q, i): IndexedFingerprint[] => {
      if (verdicts[i] === null && q.simhash !== null) return [{ urlHash: q.urlHash, simhash: q.simhash }];
      return q.recrawl ? [{ urlHash: q.urlHash, simhash: null }] : [];
    });
    const inBatch = new Map(queries.map((q) => [q.urlHash.toString('latin1'), q]));
    const unnamed: Buffer[] = [];
    const answers = queries.map((q, i): DuplicateAnswer => {
      const verdict = verdicts[i] ?? null;
      const batchOf = verdict === null ? undefined : inBatch.get(verdict.of.toString('latin1'));
      const ofUrl = verdict === null ? null : (batchOf?.url ?? this.nameOf(verdict.of, firsts) ?? null);
      if (verdict !== null && ofUrl === null) unnamed.push(verdict.of);
      const first = firsts.get(q.contentHash);
      let earlier: Capture | null = null;
      if (verdict?.kind === 'exact') {
        earlier = batchOf ? { url: batchOf.url, capturedAt: batchOf.fetchedAt } : first ? { url: first.url, capturedAt: first.capturedAt } : null;
      } else if (first && first.urlHash.equals(q.urlHash)) {
        earlier = { url: first.url, capturedAt: first.capturedAt };
      } else if (!first) {
        this.remember(q);
      }
      return { verdict, ofUrl, earlier };
    });
    return { answers, entries, unnamed };
  }

  private nameOf(urlHash: Buffer, firsts: Map<string, { urlHash: Buffer } & Capture>): string | undefined {
    const remembered = this.recentUrls.get(urlHash.toString('latin1'));
    if (remembered !== undefined) return remembered;
    for (const first of firsts.values()) if (first.urlHash.equals(urlHash)) return first.url;
    return undefined;
  }

  private remember(q: DuplicateQuery): void {
    if (this.recent.has(q.contentHash)) return;
    this.recent.set(q.contentHash, { urlHash: q.urlHash, url: q.url, capturedAt: q.fetchedAt });
    this.recentUrls.set(q.urlHash.toString('latin1'), q.url);
    if (this.recent.size > this.options.rememberBodies) {
      const [oldest, entry] = this.recent.entries().next().value as [string, { urlHash: Buffer }];
      this.recent.delete(oldest);
      this.recentUrls.delete(entry.urlHash.toString('latin1'));
    }
  }
}
