import type { BloomFilter } from './bloom.js';

/** The exact store behind the Bloom filter: Postgres `urls`, keyed by fingerprint. */
export interface ExactStore {
  /** Which of these fingerprints the store holds, as latin1 strings of the raw bytes. */
  existing(fingerprints: readonly Buffer[]): Promise<Set<string>>;
}

export interface SeenVerdicts {
  /** Per input fingerprint: true if no crawl has discovered it yet. */
  unseen: boolean[];
  /** Bloom answered "maybe seen". */
  maybeSeen: number;
  /** … and the exact store said it was not: a Bloom false positive caught. */
  falsePositives: number;
  /** Answered "seen" by the known-fingerprint cache, asking neither the filter nor the store. */
  cacheHits: number;
}

const key = (fp: Buffer): string => fp.toString('latin1');

/**
 * The seen-set: Bloom filter first, and every "maybe seen" confirmed against the exact store so a
 * false positive never drops a page. Fingerprints known to the exact store (inserted or confirmed
 * by this process) are remembered in a bounded cache and answered "seen" before the filter is
 * asked: nav links repeat on every page of a site, so the cache spares most filter calls and
 * store lookups. A fingerprint the cache answers is in the filter already unless the filter was
 * wiped since, and then its entry in the exact store still keeps it from being queued twice.
 *
 * `unseen` is a claim, not a lock: two workers may both see a fresh URL as unseen (one via
 * "definitely new", one via a false positive racing the insert); the caller's insert into the
 * exact store (ON CONFLICT DO NOTHING RETURNING) decides who queues it.
 */
export class SeenSet {
  private readonly known = new Map<string, true>();

  constructor(
    readonly bloom: BloomFilter,
    private readonly exact: ExactStore,
    private readonly knownCacheSize = 100_000,
  ) {}

  async filterUnseen(fingerprints: readonly Buffer[]): Promise<SeenVerdicts> {
    const unseen = new Array<boolean>(fingerprints.length).fill(false);
    const firstIndex = new Set<string>();
    const distinct: Buffer[] = [];
    const distinctAt: number[] = [];
    let cacheHits = 0;
    fingerprints.forEach((fp, i) => {
      const k = key(fp);
      if (firstIndex.has(k)) return; // a repeat within the batch is never new twice
      firstIndex.add(k);
      // Known to the exact store: seen, whatever the filter would say. Nav links repeat on every
      // page of a site, so most of a page's links end here and cost the filter nothing.
      if (this.known.has(k)) {
        cacheHits += 1;
        this.touch(k);
        return;
      }
      distinct.push(fp);
      distinctAt.push(i);
    });

    const fresh = distinct.length > 0 ? await this.bloom.addIfNew(distinct) : [];
    const toConfirm: Buffer[] = [];
    const toConfirmAt: number[] = [];
    let maybeSeen = 0;
    fresh.forEach((isNew, j) => {
      const at = distinctAt[j] as number;
      if (isNew) {
        unseen[at] = true;
        return;
      }
      maybeSeen += 1;
      toConfirm.push(distinct[j] as Buffer);
      toConfirmAt.push(at);
    });

    let falsePositives = 0;
    if (toConfirm.length > 0) {
      const existing = await this.exact.existing(toConfirm);
      toConfirm.forEach((fp, j) => {
        if (existing.has(key(fp))) {
          this.remember(key(fp));
        } else {
          unseen[toConfirmAt[j] as number] = true;
          falsePositives += 1;
        }
      });
    }
    return { unseen, maybeSeen, falsePositives, cacheHits };
  }

  /** Records fingerprints now known to the exact store (after an insert). */
  markKnown(fingerprints: readonly Buffer[]): void {
    for (const fp of fingerprints) this.remember(key(fp));
  }

  private touch(k: string): void {
    this.known.delete(k);
    this.known.set(k, true);
  }

  private remember(k: string): void {
    this.touch(k);
    if (this.known.size > this.knownCacheSize) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
  }
}
