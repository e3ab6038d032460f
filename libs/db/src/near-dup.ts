import type { Database } from './database.js';

/** A page in the index whose fingerprint is within the asked distance. */
export interface NearMatch {
  urlHash: Buffer;
  simhash: bigint;
  /** When the page entered the index, epoch ms. */
  indexedAt: number;
  /** Bits between its fingerprint and the one asked about. */
  distance: number;
}

export interface NearQuery {
  simhash: bigint;
  /** The asking page itself: a re-crawl must not find its own earlier fingerprint. */
  exclude?: Buffer | null;
}

export interface IndexedFingerprint {
  urlHash: Buffer;
  /** null removes the page from the index (it became someone's duplicate, or lost its text). */
  simhash: bigint | null;
}

/** The first page recorded with a body. */
export interface FirstCapture {
  urlHash: Buffer;
  url: string;
  capturedAt: Date;
}

/** What a page's row says about the body it holds now (what a 304 confirmed). */
export interface StoredCapture {
  url: string;
  contentHash: string | null;
  storageKey: string | null;
  /** When the page last changed to this body, else when it was fetched. */
  capturedAt: Date;
}

export interface DuplicateRecord {
  urlHash: Buffer;
  simhash: bigint | null;
  duplicateOf: Buffer | null;
  duplicateKind: 'exact' | 'near' | null;
  duplicateDistance: number | null;
}

/** Four 16-bit bands: the index answers distances up to 3 exactly (pigeonhole). */
export const MAX_INDEXED_DISTANCE = 3;

/** Band `g.band` of fingerprint `s`, as stored in simhash_bands.value (0–65535; band 0 highest). */
const BAND_VALUE = (fingerprint: string, band: string): string => `((${fingerprint} >> (48 - 16 * ${band})) & 65535)::int`;

/** A row of `lookup`'s statement: a first capture (no ord) or a band match of the ord-th fingerprint. */
type LookupRow =
  | { ord: null; content_hash: string; url_hash: Buffer; url: string; at: Date; simhash: null; distance: null }
  | { ord: string; content_hash: null; url_hash: Buffer; url: null; at: Date; simhash: string; distance: number };

const lastPerUrl = <T extends { urlHash: Buffer }>(rows: readonly T[]): T[] => {
  const byUrl = new Map<string, T>();
  for (const row of rows) byUrl.set(row.urlHash.toString('latin1'), row);
  return [...byUrl.values()];
};

/**
 * PostgreSQL side of near-duplicate detection: the `simhash_bands` index (every lookup reads
 * four (band, value) index ranges and checks the exact Hamming distance on what it finds — never
 * a scan), the first page with a given body, and the duplicate columns of `crawled_pages`.
 * Every method takes a batch and runs one statement.
 */
export class NearDupIndex {
  private readonly t: { bands: string; pages: string };

  constructor(private readonly db: Pick<Database, 'pool' | 'options'>) {
    const schema = db.options.schema;
    this.t = { bands: `"${schema}".simhash_bands`, pages: `"${schema}".crawled_pages` };
  }

  /** Indexed pages within `maxDistance` bits of `simhash`: nearest, then earliest indexed, first. */
  async findNear(simhash: bigint, maxDistance: number, exclude: Buffer | null = null): Promise<NearMatch[]> {
    const [matches] = await this.findNearMany([{ simhash, exclude }], maxDistance);
    return matches ?? [];
  }

  /** `findNear` for many fingerprints in one statement; the answer lists match the queries. */
  async findNearMany(queries: readonly NearQuery[], maxDistance: number): Promise<NearMatch[][]> {
    return (await this.lookup([], queries, maxDistance)).near;
  }

  /**
   * What classifying a batch of bodies reads, in one statement: `firstWithContent` of the body
   * hashes and `findNearMany` of the fingerprints, the same answers as those two give.
   */
  async lookup(
    contentHashes: readonly string[],
    queries: readonly NearQuery[],
    maxDistance: number,
  ): Promise<{ first: Map<string, FirstCapture>; near: NearMatch[][] }> {
    if (!Number.isInteger(maxDistance) || maxDistance < 0 || maxDistance > MAX_INDEXED_DISTANCE) {
      throw new RangeError(`maxDistance must be 0–${MAX_INDEXED_DISTANCE} (four 16-bit bands), got ${maxDistance}`);
    }
    const first = new Map<string, FirstCapture>();
    const near: NearMatch[][] = queries.map(() => []);
    const distinct = [...new Set(contentHashes)];
    if (distinct.length === 0 && queries.length === 0) return { first, near };
    const { rows } = await this.db.pool.query<LookupRow>(
      // One round trip for both answers: a row with a null ord is a first capture, else a band
      // match of the ord-th fingerprint (either part may be asked with an empty array).
      // `near` reads one index range per (fingerprint, band): the LATERAL subquery (kept apart by
      // OFFSET 0) runs once per key with the band and value as parameters, so it is always an
      // index scan. Written as a join, the band value computed from both sides left the planner
      // a filter over every row of the table (a scan per batch, growing with the index) whenever
      // its statistics lagged behind the table.
      `WITH first AS (
         SELECT DISTINCT ON (content_hash) content_hash, url_hash, url, COALESCE(last_changed_at, fetched_at) AS captured_at
         FROM ${this.t.pages}
         WHERE content_hash = ANY($1::text[]) AND duplicate_kind IS DISTINCT FROM 'exact'
         ORDER BY content_hash, fetched_at, url_hash
       ),
       k AS (
         SELECT q.ord, q.s, q.self, g.band::smallint AS band, ${BAND_VALUE('q.s', 'g.band')} AS value
         FROM unnest($2::bigint[], $3::bytea[]) WITH ORDINALITY AS q(s, self, ord)
         CROSS JOIN generate_series(0, 3) AS g(band)
       ),
       near AS (
         SELECT DISTINCT ON (k.ord, b.url_hash)
                k.ord, b.url_hash, b.simhash, b.indexed_at, bit_count((k.s # b.simhash)::bit(64))::int AS distance
         FROM k
         CROSS JOIN LATERAL (
           SELECT url_hash, simhash, indexed_at FROM ${this.t.bands} WHERE band = k.band AND value = k.value OFFSET 0
         ) b
         WHERE (k.self IS NULL OR b.url_hash <> k.self)
           AND bit_count((k.s # b.simhash)::bit(64)) <= $4
         ORDER BY k.ord, b.url_hash
       )
       SELECT NULL::bigint AS ord, content_hash, url_hash, url, captured_at AS at, NULL::bigint AS simhash, NULL::int AS distance FROM first
       UNION ALL
       SELECT ord, NULL::text, url_hash, NULL::text, indexed_at, simhash, distance FROM near`,
      [distinct, queries.map((q) => q.simhash.toString()), queries.map((q) => q.exclude ?? null), maxDistance],
    );
    for (const row of rows) {
      if (row.ord === null) {
        first.set(row.content_hash, { urlHash: row.url_hash, url: row.url, capturedAt: row.at });
      } else {
        near[Number(row.ord) - 1]?.push({ urlHash: row.url_hash, simhash: BigInt(row.simhash), indexedAt: row.at.getTime(), distance: row.distance });
      }
    }
    for (const matches of near) {
      matches.sort((a, b) => a.distance - b.distance || a.indexedAt - b.indexedAt || Buffer.compare(a.urlHash, b.urlHash));
    }
    return { first, near };
  }

  /**
   * Sets (or, with `simhash: null`, removes) each page's fingerprint in the index, replacing
   * what a previous crawl of it indexed. A band value that stays the same keeps its row (and
   * its indexed_at).
   */
  async index(entries: readonly IndexedFingerprint[]): Promise<void> {
    if (entries.length === 0) return;
    const rows = lastPerUrl(entries);
    const hashes = rows.map((r) => r.urlHash);
    const fingerprints = rows.map((r) => (r.simhash === null ? null : r.simhash.toString()));
    // Rows deleted and rows upserted are disjoint sets (different band values), so the two
    // parts of the statement never touch one row twice. The delete finds a page's rows through
    // the url_hash index (`= ANY`), not by joining the whole table.
    await this.db.pool.query(
      `WITH x AS (
         SELECT h, s FROM unnest($1::bytea[], $2::bigint[]) AS x(h, s)
       ),
       wanted AS (
         SELECT g.band::smallint AS band, ${BAND_VALUE('x.s', 'g.band')} AS value, x.h, x.s
         FROM x CROSS JOIN generate_series(0, 3) AS g(band) WHERE x.s IS NOT NULL
       ),
       stale AS (
         DELETE FROM ${this.t.bands} b
         WHERE b.url_hash = ANY($1::bytea[])
           AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.h = b.url_hash AND w.band = b.band AND w.value = b.value)
       )
       INSERT INTO ${this.t.bands} (band, value, url_hash, simhash)
       SELECT band, value, h, s FROM wanted
       ON CONFLICT (band, value, url_hash) DO UPDATE SET simhash = EXCLUDED.simhash`,
      [hashes, fingerprints],
    );
  }

  /**
   * For each body hash, the first page recorded with it that is not itself an exact duplicate
   * (earliest fetched_at, then lowest url_hash): what an identical body is a duplicate of, and
   * — for a WARC revisit — where and when that body was captured (`capturedAt`: when the page
   * last changed to this body, else its fetch time). Keyed by content hash; hashes no page has
   * are absent.
   */
  async firstWithContent(contentHashes: readonly string[]): Promise<Map<string, FirstCapture>> {
    // No fingerprints asked about: any valid distance will do.
    return (await this.lookup(contentHashes, [], 0)).first;
  }

  /**
   * The URLs of pages by url_hash, from `urls` (which holds every known URL, so a duplicate's
   * first page is found even before its own record is written). Keyed by url_hash (latin1).
   */
  async urlsOf(urlHashes: readonly Buffer[]): Promise<Map<string, string>> {
    const result = new Map<string, string>();
    if (urlHashes.length === 0) return result;
    const { rows } = await this.db.pool.query<{ url_hash: Buffer; url: string }>(
      `SELECT url_hash, url FROM "${this.db.options.schema}".urls WHERE url_hash = ANY($1::bytea[])`,
      [urlHashes],
    );
    for (const row of rows) result.set(row.url_hash.toString('latin1'), row.url);
    return result;
  }

  /** The body each page's row holds now, and since when (a 304's WARC revisit refers to it). Keyed by url_hash (latin1). */
  async storedCaptures(urlHashes: readonly Buffer[]): Promise<Map<string, StoredCapture>> {
    const result = new Map<string, StoredCapture>();
    if (urlHashes.length === 0) return result;
    const { rows } = await this.db.pool.query<{ url_hash: Buffer; url: string; content_hash: string | null; storage_key: string | null; captured_at: Date }>(
      `SELECT url_hash, url, content_hash, storage_key, COALESCE(last_changed_at, fetched_at) AS captured_at
       FROM ${this.t.pages} WHERE url_hash = ANY($1::bytea[])`,
      [urlHashes],
    );
    for (const row of rows) {
      result.set(row.url_hash.toString('latin1'), { url: row.url, contentHash: row.content_hash, storageKey: row.storage_key, capturedAt: row.captured_at });
    }
    return result;
  }

  /** Writes simhash and the duplicate columns of pages already in crawled_pages. */
  async recordDuplicates(records: readonly DuplicateRecord[]): Promise<void> {
    if (records.length === 0) return;
    const rows = lastPerUrl(records);
    await this.db.pool.query(
      `UPDATE ${this.t.pages} AS p
       SET simhash = x.s, duplicate_of = x.d, duplicate_kind = x.k, duplicate_distance = x.n
       FROM unnest($1::bytea[], $2::bigint[], $3::bytea[], $4::text[], $5::smallint[]) AS x(h, s, d, k, n)
       WHERE p.url_hash = x.h`,
      [
        rows.map((r) => r.urlHash),
        rows.map((r) => (r.simhash === null ? null : r.simhash.toString())),
        rows.map((r) => r.duplicateOf),
        rows.map((r) => r.duplicateKind),
        rows.map((r) => r.duplicateDistance),
      ],
    );
  }
}
