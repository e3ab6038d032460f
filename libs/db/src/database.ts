import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ErrorCode, TrawlError } from '@trawl/core';
import pg from 'pg';
import { type Rejection, writeIsolating } from './isolate.js';
import { storableText, storableTextOrNull } from './text.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));
/** The migrations' names as node-pg-migrate records them in `pgmigrations`: the file names without extension. */
let migrationNames: readonly string[] | null = null;
function allMigrations(): readonly string[] {
  migrationNames ??= readdirSync(MIGRATIONS_DIR)
    .filter((file) => /\.(sql|js|cjs|mjs)$/.test(file))
    .map((file) => file.replace(/\.[^.]+$/, ''));
  return migrationNames;
}
/** The comment on every schema trawl made: `--fresh` drops no other. */
export const TRAWL_SCHEMA_MARK = 'trawl namespace';
/**
 * A schema from before the mark is trawl's when it ran trawl's first migration and holds nothing
 * but the relations trawl's migrations made until then (a fixed list: every schema made since is marked).
 */
const FIRST_MIGRATION = '1700000000001_urls-and-crawled-pages';
const UNMARKED_TRAWL_RELATIONS = new Set(['crawled_pages', 'freshness_by_host', 'freshness_total', 'paused_hosts', 'pgmigrations', 'recrawl_overdue', 'recrawl_visits', 'simhash_bands', 'sitemaps', 'urls']);

export type UrlState = 'new' | 'queued' | 'done' | 'failed' | 'skipped';

export interface DiscoveredUrl {
  hash: Buffer;
  url: string;
  host: string;
  depth: number;
  from: Buffer | null;
  /** Known never to be fetched (e.g. robots.txt forbids it): stored as 'skipped' with this reason. */
  skipReason?: string | null;
}

/** A `urls` row as `trawl frontier rebuild` reads it. */
export interface RebuildRow {
  hash: Buffer;
  /** `urls.id`: the order URLs were inserted in (a seen-set snapshot covers the ids up to its own). */
  id: number;
  url: string;
  host: string;
  depth: number;
  state: UrlState;
  /** Given as a seed (depth 0, found on no page). */
  seed: boolean;
  /** Has a page record: fetched before, so queued again it is a re-crawl. */
  fetched: boolean;
  /** Changed since the rebuild began (queued into the new frontier by the live crawl). */
  changedSince: boolean;
  /** Queued, but waiting in PostgreSQL (spilled past TRAWL_FRONTIER_REDIS_MAX_URLS), not in Redis. */
  spilled: boolean;
}

/** A queued URL the frontier spilled: it waits here, in its host's order, until a refill takes it. */
export interface SpilledUrl {
  hash: Buffer;
  /** Its priority band (higher is served first). */
  band: number;
  /** Its back-queue entry as the frontier encoded it. */
  entry: string;
}

/** A spilled URL a refill took (see `takeSpilled`). */
export interface TakenSpill {
  host: string;
  band: number;
  entry: string;
}

export interface PageHistory {
  contentHash: string | null;
  changeFrequencyS: number | null;
  lastChangedAt: number | null;
}

/** The outcome of one fetch, as recorded in crawled_pages (and urls.state). */
export interface PageRecord {
  hash: Buffer;
  url: string;
  host: string;
  depth: number;
  state: UrlState;
  httpStatus: number | null;
  contentType: string | null;
  contentHash: string | null;
  storageKey: string | null;
  fetchedAt: number;
  contentLength: number | null;
  truncated: boolean;
  fetchMs: number | null;
  redirectTo: string | null;
  canonicalUrl: string | null;
  linksFound: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  changeFrequencyS: number | null;
  lastChangedAt: number | null;
  nextCrawlAt: number | null;
  etag: string | null;
  lastModified: string | null;
  charset: string | null;
  noindex: boolean;
  nofollow: boolean;
  bodySkipped: boolean;
  /**
   * The page's re-crawl statistics after this visit (fields as @trawl/recrawl's RecrawlState);
   * absent or null: the stored ones are kept.
   */
  recrawl?: PageRecrawlStats | null;
  /**
   * The near-duplicate verdict of the page's content, and what the page says about itself. A
   * record is the page's whole new state: absent means none (the caller carries stored values
   * over when a visit did not read the content). A 304 keeps the stored ones whatever is passed.
   */
  dedup?: PageDedup;
  text?: PageText;
  /**
   * Whether the page's links, text and fingerprint came from a rendered DOM, and why it was or
   * was not rendered (absent: rendering was not considered; a 304 keeps the stored values).
   */
  render?: PageRender;
}

export interface PageRender {
  rendered: boolean;
  reason: string;
  /** The rendered DOM's key in the content store (null or absent: not rendered, or not stored). */
  domKey?: string | null;
}

export interface PageRecrawlStats {
  visits: number;
  changes: number;
  changedS: number;
  unchangedS: number;
  checkedAt: number | null;
  intervalS: number | null;
  failures: number;
}

export interface PageDedup {
  /** 64-bit SimHash of the visible text (signed, as PostgreSQL bigint); null for non-text bodies. */
  simhash: bigint | null;
  /** The first page of the duplicate cluster (null: this page is its own original). */
  duplicateOf: Buffer | null;
  duplicateKind: 'exact' | 'near' | null;
  duplicateDistance: number | null;
}

export interface PageText {
  title: string | null;
  description: string | null;
  language: string | null;
  wordCount: number | null;
  /** Where the visible main text is stored (content-addressed, beside the body). */
  textKey: string | null;
}

export interface DatabaseOptions {
  url: string;
  /** PostgreSQL schema holding this crawl's tables (the namespace). */
  schema: string;
  poolSize?: number;
  /** Set application_name to tell processes apart in pg_stat_activity. */
  applicationName?: string;
  /**
   * How long a statement is retried while PostgreSQL is unreachable or restarting (see
   * `isTransientDbError`); 0: never. Default 0.
   */
  retryMs?: number;
  /** Told about each retry (for a log line), with the error and how long the statement has waited. */
  onRetry?: (error: unknown, waitedMs: number) => void;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** The PageRecord fields written to text columns (each goes through storableText). */
type TextField = 'url' | 'host' | 'contentType' | 'contentHash' | 'storageKey' | 'redirectTo' | 'canonicalUrl' | 'errorCode' | 'errorMessage' | 'etag' | 'lastModified' | 'charset';

const toDateOrNull = (ms: number | null | undefined): Date | null => (ms === null || ms === undefined ? null : new Date(ms));

/** A record PostgreSQL refused (the rest of its batch was written), with the reason to dead-letter it with. */
export interface RejectedRecord {
  hash: Buffer;
  url: string;
  /** SQLSTATE of the refusal (class 22 or 23). */
  sqlState: string;
  /** `ERR_DATABASE: PostgreSQL refused the row: … [SQLSTATE …]`. */
  reason: string;
}

export interface InsertDiscoveredResult {
  /** Fingerprints this call inserted: only these may be pushed to the frontier. */
  inserted: Buffer[];
  /** URLs PostgreSQL refused: not inserted, never to be pushed. */
  rejected: RejectedRecord[];
}

export interface RecordPagesResult {
  /** Records applied to crawled_pages and urls. */
  written: number;
  /**
   * Positions (in the call's argument) of records that changed nothing because the rows hold a
   * newer or final outcome: late, stale records. Their jobs are finished all the same; anything
   * derived from them (re-crawl state) must not be written either.
   */
  superseded: number[];
  /**
   * Records PostgreSQL refused: nothing of them was written. Dead-letter their jobs with
   * `reason`; `index` is the record's position in the call's argument.
   */
  rejected: (RejectedRecord & { index: number })[];
}

export interface RecordSitemapsResult {
  written: number;
  rejected: { url: string; sqlState: string; reason: string }[];
}

/** Keeps the last row per key: a multi-row upsert may not touch one key twice. */
function lastPerKey<T extends { hash: Buffer }>(rows: readonly T[]): T[] {
  const byKey = new Map<string, T>();
  for (const row of rows) byKey.set(row.hash.toString('latin1'), row);
  return [...byKey.values()];
}

/**
 * Rows in key order. Every multi-row write locks its rows in the order it meets them; writers
 * that all go in one order cannot deadlock on each other (PostgreSQL's 40P01), whatever order
 * their callers batched the keys in.
 */
function inKeyOrder<T extends { hash: Buffer }>(rows: readonly T[]): T[] {
  return [...rows].sort((a, b) => Buffer.compare(a.hash, b.hash));
}

/**
 * Splits rows into successive rounds in which each key appears once (a multi-row upsert may not
 * touch one key twice), keeping their order: the second record of a key is written after the
 * first, so the upsert's own rules decide between them, not the batching.
 */
function rounds<T extends { hash: Buffer }>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  const seen = new Map<string, number>();
  for (const row of rows) {
    const key = row.hash.toString('latin1');
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (out[round] ??= []).push(row);
  }
  return out.map(inKeyOrder);
}

/** Epoch ms as a timestamp; an invalid time becomes NULL (a NOT NULL column then refuses the row). */
const toDate = (ms: number | null): Date | null => (ms === null || !Number.isFinite(ms) ? null : new Date(ms));

const rejectedRecord = <T extends { hash: Buffer; url: string }>(r: Rejection<T>): RejectedRecord => ({
  hash: r.row.hash,
  url: r.row.url,
  sqlState: r.sqlState,
  reason: r.reason,
});

/**
 * PostgreSQL access for one crawl namespace: every known URL (`urls`) and every fetched page
 * (`crawled_pages`). All writes take arrays and run as one statement (unnest), because the
 * callers batch across many jobs.
 */
export class Database {
  readonly pool: pg.Pool;
  private readonly t: { urls: string; pages: string; sitemaps: string };

  constructor(readonly options: DatabaseOptions) {
    if (!IDENTIFIER.test(options.schema)) throw new Error(`invalid schema name: ${options.schema}`);
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 8,
      application_name: options.applicationName ?? 'trawl',
    });
    // A dropped idle connection must not crash the process; the pool replaces it.
    this.pool.on('error', () => undefined);
    if ((options.retryMs ?? 0) > 0) retryTransientQueries(this.pool, options.retryMs ?? 0, options.onRetry);
    this.t = { urls: `"${options.schema}".urls`, pages: `"${options.schema}".crawled_pages`, sitemaps: `"${options.schema}".sitemaps` };
  }

  /**
   * Creates the schema and applies pending migrations; concurrent callers wait on a lock. A schema
   * trawl made that already holds every migration is left alone after one read: every process
   * opens its database this way, and node-pg-migrate (its lock, its table reads, and ~170 ms of
   * CPU to load it) is only needed when there is something to apply.
   */
  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      if (await this.isMigrated(client)) return;
      const { runner } = await import('node-pg-migrate');
      // Marked as trawl's only when trawl makes it (or it is empty, or trawl migrated it before the
      // mark existed): a schema of someone else's that TRAWL_NAMESPACE names is never marked, so
      // `--fresh` never drops it.
      const mark = (await this.schemaOwner(client)) !== 'foreign';
      await runner({
        dbClient: client,
        dir: MIGRATIONS_DIR,
        direction: 'up',
        schema: this.options.schema,
        createSchema: true,
        migrationsTable: 'pgmigrations',
        advisoryLockMode: 'wait',
        log: () => undefined,
        logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
      });
      if (mark) await client.query(`COMMENT ON SCHEMA "${this.options.schema}" IS '${TRAWL_SCHEMA_MARK}'`);
    } finally {
      client.release();
    }
  }

  /**
   * Whether the schema is trawl's (marked: the mark is set once the migrations have run) and
   * `pgmigrations` lists every migration. Each migration commits with its row, so a listed one
   * is applied.
   */
  private async isMigrated(client: pg.PoolClient): Promise<boolean> {
    const schema = this.options.schema;
    const { rows } = await client.query<{ comment: string | null; migrated: boolean }>(
      `SELECT obj_description(n.oid, 'pg_namespace') AS comment,
              to_regclass(format('%I.pgmigrations', n.nspname)) IS NOT NULL AS migrated
         FROM pg_namespace n WHERE n.nspname = $1`,
      [schema],
    );
    const row = rows[0];
    if (row === undefined || row.comment !== TRAWL_SCHEMA_MARK || !row.migrated) return false;
    const applied = await client.query<{ name: string }>(`SELECT name FROM "${schema}".pgmigrations`);
    const names = new Set(applied.rows.map((r) => r.name));
    return allMigrations().every((name) => names.has(name));
  }

  /**
   * Whose the namespace's schema is: absent, trawl's (marked, empty, or holding trawl's first
   * migration from before the mark), or foreign (anything else).
   */
  private async schemaOwner(client: pg.PoolClient): Promise<'absent' | 'trawl' | 'foreign'> {
    const schema = this.options.schema;
    const { rows } = await client.query<{ comment: string | null; tables: string[]; migrated: boolean }>(
      `SELECT obj_description(n.oid, 'pg_namespace') AS comment,
              ARRAY(SELECT c.relname::text FROM pg_class c WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'p', 'v', 'm', 'f')) AS tables,
              to_regclass(format('%I.pgmigrations', n.nspname)) IS NOT NULL AS migrated
         FROM pg_namespace n WHERE n.nspname = $1`,
      [schema],
    );
    const row = rows[0];
    if (row === undefined) return 'absent';
    if (row.comment === TRAWL_SCHEMA_MARK || row.tables.length === 0) return 'trawl';
    if (row.migrated && row.tables.every((table) => UNMARKED_TRAWL_RELATIONS.has(table))) {
      const first = await client.query(`SELECT 1 FROM "${schema}".pgmigrations WHERE name = $1`, [FIRST_MIGRATION]);
      if (first.rowCount === 1) return 'trawl';
    }
    return 'foreign';
  }

  /**
   * Drops the namespace's schema and everything in it (tests, `trawl crawl --fresh`): only a
   * schema trawl made (see migrate); another one is refused, whatever TRAWL_NAMESPACE says.
   */
  async dropSchema(): Promise<void> {
    const client = await this.pool.connect();
    try {
      if ((await this.schemaOwner(client)) === 'foreign') {
        throw new TrawlError(ErrorCode.ConfigInvalid, `the PostgreSQL schema "${this.options.schema}" (TRAWL_NAMESPACE) was not made by trawl: refusing to drop it and everything in it`, { action: 'fatal' });
      }
      await client.query(`DROP SCHEMA IF EXISTS "${this.options.schema}" CASCADE`);
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** ExactStore: which fingerprints are known, as latin1 strings. */
  async existing(hashes: readonly Buffer[]): Promise<Set<string>> {
    if (hashes.length === 0) return new Set();
    const { rows } = await this.pool.query<{ url_hash: Buffer }>(`SELECT url_hash FROM ${this.t.urls} WHERE url_hash = ANY($1::bytea[])`, [hashes]);
    return new Set(rows.map((r) => r.url_hash.toString('latin1')));
  }

  /**
   * Discovery: inserts URLs not yet known (state 'new', or 'skipped' with a reason) and returns
   * the fingerprints this call inserted. Only those may be pushed to the frontier: when two
   * workers race on one URL, the insert decides who queues it. A URL PostgreSQL refuses is
   * returned in `rejected` and the rest are inserted.
   */
  async insertDiscovered(urls: readonly DiscoveredUrl[]): Promise<InsertDiscoveredResult> {
    if (urls.length === 0) return { inserted: [], rejected: [] };
    const rows = inKeyOrder(lastPerKey(urls));
    const { results, rejected } = await writeIsolating(rows, async (part) => {
      const { rows: inserted } = await this.pool.query<{ url_hash: Buffer }>(
        `INSERT INTO ${this.t.urls} (url_hash, url, host, depth, state, discovered_from, skip_reason)
         SELECT h, u, o, d, CASE WHEN s IS NULL THEN 'new' ELSE 'skipped' END, f, s
         FROM unnest($1::bytea[], $2::text[], $3::text[], $4::int[], $5::bytea[], $6::text[]) AS x(h, u, o, d, f, s)
         ORDER BY h
         ON CONFLICT (url_hash) DO NOTHING
         RETURNING url_hash`,
        [
          part.map((r) => r.hash),
          part.map((r) => storableText(r.url)),
          part.map((r) => storableText(r.host)),
          part.map((r) => r.depth),
          part.map((r) => r.from),
          part.map((r) => storableTextOrNull(r.skipReason)),
        ],
      );
      return inserted.map((r) => r.url_hash);
    });
    return { inserted: results.flat(), rejected: rejected.map(rejectedRecord) };
  }

  /**
   * Of these fingerprints, those recorded but never confirmed queued (state 'new'): a process
   * died between inserting them and pushing them to the frontier.
   */
  async unconfirmed(hashes: readonly Buffer[]): Promise<Set<string>> {
    if (hashes.length === 0) return new Set();
    const { rows } = await this.pool.query<{ url_hash: Buffer }>(
      `SELECT url_hash FROM ${this.t.urls} WHERE url_hash = ANY($1::bytea[]) AND state = 'new'`,
      [hashes],
    );
    return new Set(rows.map((r) => r.url_hash.toString('latin1')));
  }

  /** The frontier now holds these URLs. */
  async markQueued(hashes: readonly Buffer[]): Promise<void> {
    if (hashes.length === 0) return;
    // Rows are locked in key order (see inKeyOrder) before they are updated.
    await this.pool.query(
      `WITH k AS (SELECT url_hash FROM ${this.t.urls} WHERE url_hash = ANY($1::bytea[]) AND state = 'new' ORDER BY url_hash FOR UPDATE)
       UPDATE ${this.t.urls} u SET state = 'queued', updated_at = now() FROM k WHERE u.url_hash = k.url_hash AND u.state = 'new'`,
      [hashes],
    );
  }

  /**
   * The frontier spilled these URLs (past TRAWL_FRONTIER_REDIS_MAX_URLS): they are queued, and
   * wait here with their band and entry until a refill puts them into Redis.
   */
  async markSpilled(rows: readonly SpilledUrl[]): Promise<void> {
    if (rows.length === 0) return;
    const sorted = inKeyOrder(lastPerKey(rows));
    // Rows are locked in key order (see inKeyOrder) before they are updated.
    await this.pool.query(
      `WITH x AS (SELECT * FROM unnest($1::bytea[], $2::smallint[], $3::text[]) AS x(h, b, e)),
       k AS (SELECT u.url_hash, x.b, x.e FROM ${this.t.urls} u JOIN x ON x.h = u.url_hash WHERE u.state = 'new' ORDER BY u.url_hash FOR UPDATE OF u)
       UPDATE ${this.t.urls} u SET state = 'queued', spill_band = k.b, spill_entry = k.e, updated_at = now() FROM k WHERE u.url_hash = k.url_hash AND u.state = 'new'`,
      [sorted.map((r) => r.hash), sorted.map((r) => r.band), sorted.map((r) => storableText(r.entry))],
    );
  }

  /**
   * A refill takes up to `wanted` spilled URLs of each host — its best: highest band, then
   * discovery order — and tags them with its token; they come back in that order, host by host.
   * A host with URLs tagged by another refill not yet settled gives none (its URLs must come
   * back in order).
   */
  async takeSpilled(token: string, hosts: readonly { host: string; wanted: number }[]): Promise<TakenSpill[]> {
    if (hosts.length === 0) return [];
    const { rows } = await this.pool.query<{ host: string; spill_band: number; spill_entry: string; id: string }>(
      `WITH w AS (SELECT * FROM unnest($2::text[], $3::int[]) AS w(host, n)),
       pick AS (
         SELECT s.url_hash FROM w CROSS JOIN LATERAL (
           SELECT u.url_hash FROM ${this.t.urls} u
           WHERE u.host = w.host AND u.spill_band IS NOT NULL AND u.state = 'queued' AND u.refill IS NULL
             AND NOT EXISTS (SELECT 1 FROM ${this.t.urls} x WHERE x.host = w.host AND x.spill_band IS NOT NULL AND x.refill IS NOT NULL)
           ORDER BY u.spill_band DESC, u.id LIMIT w.n) s
       )
       UPDATE ${this.t.urls} u SET refill = $1 FROM pick WHERE u.url_hash = pick.url_hash AND u.refill IS NULL AND u.spill_band IS NOT NULL
       RETURNING u.host, u.spill_band, u.spill_entry, u.id`,
      [token, hosts.map((h) => h.host), hosts.map((h) => h.wanted)],
    );
    const order = new Map(hosts.map((h, i) => [h.host, i]));
    rows.sort((a, b) => (order.get(a.host) ?? 0) - (order.get(b.host) ?? 0) || b.spill_band - a.spill_band || Number(a.id) - Number(b.id));
    return rows.map((r) => ({ host: r.host, band: r.spill_band, entry: r.spill_entry }));
  }

  /** Tokens of refills whose rows are still tagged, of one partition (tokens start "p<n>:"). */
  async unsettledRefills(partition: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ refill: string }>(`SELECT DISTINCT refill FROM ${this.t.urls} WHERE refill IS NOT NULL AND starts_with(refill, $1)`, [`p${partition}:`]);
    return rows.map((r) => r.refill);
  }

  /**
   * Writes a refill's outcome: landed, its rows are in Redis now (no longer spilled); void, they
   * are free for another refill.
   */
  async settleRefill(token: string, landed: boolean): Promise<void> {
    await this.pool.query(
      landed
        ? `UPDATE ${this.t.urls} SET spill_band = NULL, spill_entry = NULL, refill = NULL, updated_at = now() WHERE refill = $1`
        : `UPDATE ${this.t.urls} SET refill = NULL WHERE refill = $1`,
      [token],
    );
  }

  /**
   * Discovery offered these URLs to the frontier and it refused them (the host's URL budget is
   * spent, the path has had its share of query variants): they are skipped for good, with why.
   */
  async markRefused(rows: readonly { hash: Buffer; reason: string }[]): Promise<void> {
    if (rows.length === 0) return;
    const sorted = inKeyOrder(lastPerKey(rows));
    // Rows are locked in key order (see inKeyOrder) before they are updated.
    await this.pool.query(
      `WITH x AS (SELECT * FROM unnest($1::bytea[], $2::text[]) AS x(h, r)),
       k AS (SELECT u.url_hash, x.r FROM ${this.t.urls} u JOIN x ON x.h = u.url_hash WHERE u.state = 'new' ORDER BY u.url_hash FOR UPDATE OF u)
       UPDATE ${this.t.urls} u SET state = 'skipped', skip_reason = k.r, updated_at = now() FROM k WHERE u.url_hash = k.url_hash AND u.state = 'new'`,
      [sorted.map((r) => r.hash), sorted.map((r) => storableText(r.reason))],
    );
  }

  /**
   * One page of `urls` in fingerprint order after `after` (keyset pagination: no offset, no
   * snapshot held between pages), with what `trawl frontier rebuild` needs of each: its state,
   * whether it is a seed, whether it was fetched before (a re-crawl), and whether it changed
   * since `since` (rows queued while the rebuild runs went into the new frontier already).
   */
  async urlsForRebuild(after: Buffer | null, since: Date, limit: number): Promise<RebuildRow[]> {
    const { rows } = await this.pool.query<{ url_hash: Buffer; id: string; url: string; host: string; depth: number; state: UrlState; seed: boolean; fetched: boolean; changed: boolean; spilled: boolean }>(
      `SELECT u.url_hash, u.id, u.url, u.host, u.depth, u.state, (u.depth = 0 AND u.discovered_from IS NULL) AS seed, (u.spill_band IS NOT NULL) AS spilled,
              (p.url_hash IS NOT NULL) AS fetched, (u.updated_at >= $2) AS changed
       FROM ${this.t.urls} u LEFT JOIN ${this.t.pages} p ON p.url_hash = u.url_hash
       WHERE u.url_hash > $1 ORDER BY u.url_hash LIMIT $3`,
      [after ?? Buffer.alloc(0), since, limit],
    );
    return rows.map((r) => ({ hash: r.url_hash, id: Number(r.id), url: r.url, host: r.host, depth: r.depth, state: r.state, seed: r.seed, fetched: r.fetched, changedSince: r.changed, spilled: r.spilled }));
  }

  /**
   * Every seed the crawl knows (a URL at depth 0 that no page linked to): what a rebuild puts back
   * into the crawl policy's scope before it hands the crawl back, ahead of its scan.
   */
  async seedUrls(): Promise<string[]> {
    const { rows } = await this.pool.query<{ url: string }>(`SELECT url FROM ${this.t.urls} WHERE depth = 0 AND discovered_from IS NULL`);
    return rows.map((r) => r.url);
  }

  /** The database server's clock (what `updated_at` is written with). */
  async now(): Promise<Date> {
    const { rows } = await this.pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
    return (rows[0] as { now: Date }).now;
  }

  /**
   * The highest `urls.id` committed so far (0 with no URL). Ids come from a sequence, so a URL
   * inserted after this call gets a higher one; one inserted before it but not yet committed has
   * a lower one, and its seen-set entry was added before its insert began.
   */
  async maxUrlId(): Promise<number> {
    const { rows } = await this.pool.query<{ max: string | null }>(`SELECT max(id) AS max FROM ${this.t.urls}`);
    return Number(rows[0]?.max ?? 0);
  }

  /**
   * Which `urls` table this is (its OID): a schema dropped and created again (`--fresh`) numbers
   * its URLs from 1 again, so ids of the old table mean nothing in the new one.
   */
  async urlsTableId(): Promise<string> {
    const { rows } = await this.pool.query<{ oid: string }>(`SELECT $1::regclass::oid::text AS oid`, [this.t.urls]);
    return (rows[0] as { oid: string }).oid;
  }

  /** Whether the crawl knows any URL at all. */
  async hasUrls(): Promise<boolean> {
    const { rows } = await this.pool.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${this.t.urls}) AS any`);
    return rows[0]?.any === true;
  }

  /** The state of these URLs in `urls`, by latin1 fingerprint (absent: unknown URL). */
  async urlStates(hashes: readonly Buffer[]): Promise<Map<string, UrlState>> {
    const out = new Map<string, UrlState>();
    if (hashes.length === 0) return out;
    const { rows } = await this.pool.query<{ url_hash: Buffer; state: UrlState }>(`SELECT url_hash, state FROM ${this.t.urls} WHERE url_hash = ANY($1::bytea[])`, [hashes]);
    for (const r of rows) out.set(r.url_hash.toString('latin1'), r.state);
    return out;
  }

  /** Whether any URL waits in PostgreSQL for a refill (spilled past TRAWL_FRONTIER_REDIS_MAX_URLS, still queued). */
  async hasSpilledUrls(): Promise<boolean> {
    const { rows } = await this.pool.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${this.t.urls} WHERE spill_band IS NOT NULL AND state = 'queued') AS any`);
    return rows[0]?.any === true;
  }

  /** URLs inserted but never confirmed queued, older than `olderThanMs` (crash leftovers). */
  async unqueued(olderThanMs: number, limit: number): Promise<DiscoveredUrl[]> {
    const { rows } = await this.pool.query<{ url_hash: Buffer; url: string; host: string; depth: number; discovered_from: Buffer | null }>(
      `SELECT url_hash, url, host, depth, discovered_from FROM ${this.t.urls}
       WHERE state = 'new' AND discovered_at < now() - make_interval(secs => $1::double precision / 1000)
       ORDER BY discovered_at LIMIT $2`,
      [olderThanMs, limit],
    );
    return rows.map((r) => ({ hash: r.url_hash, url: r.url, host: r.host, depth: r.depth, from: r.discovered_from }));
  }

  /** What the page records held before (for the re-crawl interval), by latin1 fingerprint. */
  async pageHistory(hashes: readonly Buffer[]): Promise<Map<string, PageHistory>> {
    const result = new Map<string, PageHistory>();
    if (hashes.length === 0) return result;
    const { rows } = await this.pool.query<{ url_hash: Buffer; content_hash: string | null; change_frequency_s: number | null; last_changed_at: Date | null }>(
      `SELECT url_hash, content_hash, change_frequency_s, last_changed_at FROM ${this.t.pages} WHERE url_hash = ANY($1::bytea[])`,
      [hashes],
    );
    for (const r of rows) {
      result.set(r.url_hash.toString('latin1'), {
        contentHash: r.content_hash,
        changeFrequencyS: r.change_frequency_s,
        lastChangedAt: r.last_changed_at ? r.last_changed_at.getTime() : null,
      });
    }
    return result;
  }

  /**
   * Records fetch outcomes: upserts crawled_pages and sets urls.state, in one statement per batch.
   * A URL missing from `urls` (a job added by hand) is inserted. Late, stale records change
   * nothing (they count as `superseded`):
   *   - a record fetched before the page row's `fetched_at` is older than what the row holds;
   *   - within one crawl generation `done` is final: a record in another state (failed, skipped)
   *     replaces a done row only if it was fetched at or after the row's `next_crawl_at`, i.e.
   *     by a re-crawl; a done row without `next_crawl_at` is never replaced that way.
   * Records of one URL in one call are applied in order, each under those rules. A record
   * PostgreSQL refuses is returned in `rejected`; the others are written.
   */
  async recordPages(records: readonly PageRecord[]): Promise<RecordPagesResult> {
    const superseded: number[] = [];
    const rejected: (RejectedRecord & { index: number })[] = [];
    const indexed = records.map((record, index) => ({ hash: record.hash, url: record.url, record, index }));
    for (const round of rounds(indexed)) {
      const result = await writeIsolating(round, async (part) => {
        const applied = await this.upsertPages(part.map((p) => p.record));
        return part.filter((p) => !applied.has(p.hash.toString('latin1'))).map((p) => p.index);
      });
      superseded.push(...result.results.flat());
      rejected.push(...result.rejected.map((r) => ({ ...rejectedRecord(r), index: r.row.index })));
    }
    superseded.sort((a, b) => a - b);
    rejected.sort((a, b) => a.index - b.index);
    return { written: records.length - superseded.length - rejected.length, superseded, rejected };
  }

  /**
   * One statement for rows with distinct keys, in key order. Returns the keys applied (latin1).
   * A 304 (unchanged since the stored copy) keeps everything the stored copy said about the
   * content — status, type, length, body and text references, links, duplicate verdict — and
   * moves only the visit's own fields (when, how long, validators, schedule).
   */
  private async upsertPages(rows: readonly PageRecord[]): Promise<Set<string>> {
    const col = <K extends keyof PageRecord>(key: K) => rows.map((r) => r[key]);
    const text = (key: TextField) => rows.map((r) => storableTextOrNull(r[key]));
    const recrawl = <K extends keyof PageRecrawlStats>(key: K) => rows.map((r) => (r.recrawl ? r.recrawl[key] : null));
    const pageText = <K extends keyof PageText>(key: K) => rows.map((r) => (r.text ? r.text[key] : null));
    const keep304 = (column: string) => `${column} = CASE WHEN EXCLUDED.http_status = 304 THEN p.${column} ELSE EXCLUDED.${column} END`;
    const { rows: applied } = await this.pool.query<{ url_hash: Buffer }>(
      `WITH x AS (
         SELECT * FROM unnest(
           $1::bytea[], $2::text[], $3::text[], $4::int[], $5::text[], $6::smallint[], $7::text[], $8::text[], $9::text[],
           $10::timestamptz[], $11::int[], $12::bool[], $13::int[], $14::text[], $15::text[], $16::int[], $17::text[], $18::text[],
           $19::int[], $20::timestamptz[], $21::timestamptz[], $22::text[], $23::text[],
           $24::text[], $25::bool[], $26::bool[], $27::bool[],
           $28::float8[], $29::float8[], $30::float8[], $31::float8[], $32::timestamptz[], $33::float8[], $34::int[],
           $35::bigint[], $36::bytea[], $37::text[], $38::smallint[],
           $39::text[], $40::text[], $41::text[], $42::int[], $43::text[],
           $44::bool[], $45::text[], $46::text[]
         ) AS r(h, url, host, depth, state, status, ctype, chash, skey, fetched, clen, trunc, fms, redir, canon, links, ecode, emsg, freq, changed, nxt, etag, lastmod,
                charset, noindex, nofollow, skipped,
                rc_visits, rc_changes, rc_changed_s, rc_unchanged_s, rc_checked, rc_interval, rc_failures,
                simhash, dup_of, dup_kind, dup_dist,
                title, description, language, words, text_key,
                rendered, render_reason, rendered_key)
       ),
       pages AS (
         INSERT INTO ${this.t.pages} AS p (url_hash, url, host, depth, state, http_status, content_type, content_hash, storage_key, fetched_at, last_crawled_at,
           content_length, truncated, fetch_ms, redirect_to, canonical_url, links_found, error_code, error_message,
           change_frequency_s, last_changed_at, next_crawl_at, etag, last_modified, charset, noindex, nofollow, body_skipped,
           change_visits, change_count, changed_s, unchanged_s, checked_at, recrawl_interval_s, recrawl_failures,
           simhash, duplicate_of, duplicate_kind, duplicate_distance, title, description, language, word_count, text_key,
           rendered, render_reason, rendered_key)
         SELECT h, url, host, depth, state, status, ctype, chash, skey, fetched, fetched, clen, trunc, fms, redir, canon, links, ecode, emsg,
           freq, changed, nxt, etag, lastmod, charset, noindex, nofollow, skipped,
           rc_visits, rc_changes, rc_changed_s, rc_unchanged_s, rc_checked, rc_interval, rc_failures,
           simhash, dup_of, dup_kind, dup_dist, title, description, language, words, text_key,
           rendered, render_reason, rendered_key
         FROM x
         ORDER BY h
         ON CONFLICT (url_hash) DO UPDATE SET
           state = EXCLUDED.state,
           ${keep304('http_status')}, ${keep304('content_type')},
           content_hash = COALESCE(EXCLUDED.content_hash, p.content_hash), storage_key = COALESCE(EXCLUDED.storage_key, p.storage_key),
           fetched_at = EXCLUDED.fetched_at, last_crawled_at = EXCLUDED.last_crawled_at, ${keep304('content_length')},
           ${keep304('truncated')}, fetch_ms = EXCLUDED.fetch_ms, ${keep304('redirect_to')},
           ${keep304('canonical_url')}, ${keep304('links_found')}, error_code = EXCLUDED.error_code,
           error_message = EXCLUDED.error_message, change_frequency_s = EXCLUDED.change_frequency_s,
           last_changed_at = EXCLUDED.last_changed_at, next_crawl_at = EXCLUDED.next_crawl_at,
           etag = COALESCE(EXCLUDED.etag, p.etag), last_modified = COALESCE(EXCLUDED.last_modified, p.last_modified),
           ${keep304('charset')}, ${keep304('noindex')}, ${keep304('nofollow')}, ${keep304('body_skipped')},
           change_visits = COALESCE(EXCLUDED.change_visits, p.change_visits), change_count = COALESCE(EXCLUDED.change_count, p.change_count),
           changed_s = COALESCE(EXCLUDED.changed_s, p.changed_s), unchanged_s = COALESCE(EXCLUDED.unchanged_s, p.unchanged_s),
           checked_at = COALESCE(EXCLUDED.checked_at, p.checked_at), recrawl_interval_s = COALESCE(EXCLUDED.recrawl_interval_s, p.recrawl_interval_s),
           recrawl_failures = COALESCE(EXCLUDED.recrawl_failures, p.recrawl_failures),
           ${keep304('simhash')}, ${keep304('duplicate_of')}, ${keep304('duplicate_kind')}, ${keep304('duplicate_distance')},
           ${keep304('title')}, ${keep304('description')}, ${keep304('language')}, ${keep304('word_count')}, ${keep304('text_key')},
           ${keep304('rendered')}, ${keep304('render_reason')}, ${keep304('rendered_key')}
         -- Late, stale records change nothing (see recordPages).
         WHERE p.fetched_at <= EXCLUDED.fetched_at
           AND (p.state IS DISTINCT FROM 'done' OR EXCLUDED.state = 'done' OR EXCLUDED.fetched_at >= p.next_crawl_at)
         RETURNING url_hash
       )
       INSERT INTO ${this.t.urls} AS u (url_hash, url, host, depth, state)
       SELECT h, url, host, depth, state FROM x JOIN pages ON pages.url_hash = x.h
       ORDER BY h
       ON CONFLICT (url_hash) DO UPDATE SET state = EXCLUDED.state, updated_at = now()
       RETURNING u.url_hash`,
      [
        col('hash'),
        text('url'),
        text('host'),
        col('depth'),
        col('state'),
        col('httpStatus'),
        text('contentType'),
        text('contentHash'),
        text('storageKey'),
        rows.map((r) => toDate(r.fetchedAt)),
        col('contentLength'),
        col('truncated'),
        col('fetchMs'),
        text('redirectTo'),
        text('canonicalUrl'),
        col('linksFound'),
        text('errorCode'),
        text('errorMessage'),
        col('changeFrequencyS'),
        rows.map((r) => toDate(r.lastChangedAt)),
        rows.map((r) => toDate(r.nextCrawlAt)),
        text('etag'),
        text('lastModified'),
        text('charset'),
        col('noindex'),
        col('nofollow'),
        col('bodySkipped'),
        recrawl('visits'),
        recrawl('changes'),
        recrawl('changedS'),
        recrawl('unchangedS'),
        rows.map((r) => toDateOrNull(r.recrawl?.checkedAt)),
        recrawl('intervalS'),
        recrawl('failures'),
        rows.map((r) => (r.dedup?.simhash === null || r.dedup === undefined ? null : r.dedup.simhash.toString())),
        rows.map((r) => r.dedup?.duplicateOf ?? null),
        rows.map((r) => r.dedup?.duplicateKind ?? null),
        rows.map((r) => r.dedup?.duplicateDistance ?? null),
        rows.map((r) => storableTextOrNull(r.text?.title ?? null)),
        rows.map((r) => storableTextOrNull(r.text?.description ?? null)),
        pageText('language'),
        pageText('wordCount'),
        pageText('textKey'),
        rows.map((r) => r.render?.rendered ?? false),
        rows.map((r) => (r.render ? storableText(r.render.reason) : null)),
        rows.map((r) => r.render?.domKey ?? null),
      ],
    );
    return new Set(applied.map((r) => r.url_hash.toString('latin1')));
  }

  /**
   * Records the sitemaps an origin's robots.txt announces (seen again: last_seen_at moves). A URL
   * PostgreSQL refuses is returned in `rejected`; the others are written.
   */
  async recordSitemaps(origin: string, urls: readonly string[]): Promise<RecordSitemapsResult> {
    // Distinct after cleaning: two URLs that differ only by a NUL are one row.
    const distinct = [...new Set(urls.map(storableText))].sort();
    if (distinct.length === 0) return { written: 0, rejected: [] };
    const { results, rejected } = await writeIsolating(distinct, async (part) => {
      const { rowCount } = await this.pool.query(
        `INSERT INTO ${this.t.sitemaps} (url, origin) SELECT u, $2 FROM unnest($1::text[]) AS x(u) ORDER BY u COLLATE "C"
         ON CONFLICT (url) DO UPDATE SET last_seen_at = now(), origin = EXCLUDED.origin`,
        [part, storableText(origin)],
      );
      return rowCount ?? 0;
    });
    return {
      written: results.reduce((sum, n) => sum + n, 0),
      rejected: rejected.map((r) => ({ url: r.row, sqlState: r.sqlState, reason: r.reason })),
    };
  }

  async sitemapsOf(origin: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ url: string }>(`SELECT url FROM ${this.t.sitemaps} WHERE origin = $1 ORDER BY url`, [storableText(origin)]);
    return rows.map((r) => r.url);
  }

  /**
   * Sets urls.state without a page record (robots, scope, …). A done URL keeps its state: only a
   * page record of a later crawl generation replaces it (see recordPages).
   */
  async setState(hashes: readonly Buffer[], state: UrlState): Promise<void> {
    if (hashes.length === 0) return;
    // Rows are locked in key order (see inKeyOrder) before they are updated.
    await this.pool.query(
      `WITH k AS (SELECT url_hash FROM ${this.t.urls} WHERE url_hash = ANY($1::bytea[]) AND state <> 'done' ORDER BY url_hash FOR UPDATE)
       UPDATE ${this.t.urls} u SET state = $2, updated_at = now() FROM k WHERE u.url_hash = k.url_hash AND u.state <> 'done'`,
      [hashes, state],
    );
  }

  async counts(): Promise<{ urls: Record<UrlState, number>; pages: number; byStatus: Record<string, number> }> {
    const urls: Record<UrlState, number> = { new: 0, queued: 0, done: 0, failed: 0, skipped: 0 };
    const { rows } = await this.pool.query<{ state: UrlState; n: string }>(`SELECT state, count(*) AS n FROM ${this.t.urls} GROUP BY state`);
    for (const r of rows) urls[r.state] = Number(r.n);
    const { rows: statusRows } = await this.pool.query<{ status: number | null; n: string }>(
      `SELECT http_status AS status, count(*) AS n FROM ${this.t.pages} GROUP BY http_status`,
    );
    const byStatus: Record<string, number> = {};
    let pages = 0;
    for (const r of statusRows) {
      byStatus[r.status === null ? 'none' : String(r.status)] = Number(r.n);
      pages += Number(r.n);
    }
    return { urls, pages, byStatus };
  }
}

/**
 * Errors about the attempt, not the statement: the connection was refused or lost, the server is
 * shutting down, starting up or out of connections (SQLSTATE classes 08 and 57P0x, 53300), or the
 * transaction lost a race (40001 serialization failure, 40P01 deadlock). Running the statement
 * again later can succeed. Data errors (22, 23) and bugs (42…) cannot.
 */
export function isTransientDbError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (/^(08...|57P0[1-3]|53300|40001|40P01)$/.test(code)) return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND'].includes(code)) return true;
  }
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly/i.test(message);
}

/**
 * Makes `pool.query` run a statement again while PostgreSQL is unreachable or restarting, with
 * back-off from 100 ms doubling to 2 s, for up to `retryMs`; then the last error is thrown.
 * Every statement trawl sends through the pool is an idempotent write or a read, and each runs on
 * its own (autocommit), so running one again is safe: at worst a statement that did commit
 * before its connection died reports nothing inserted the second time, and the crawl's repair
 * sweep pushes the URLs it left `new`. Callback-style calls and checked-out clients (the
 * migrations' transaction) are left alone.
 */
function retryTransientQueries(pool: pg.Pool, retryMs: number, onRetry?: (error: unknown, waitedMs: number) => void): void {
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  const retrying = async (...args: unknown[]): Promise<unknown> => {
    const started = Date.now();
    for (let delay = 100; ; delay = Math.min(2000, delay * 2)) {
      try {
        return await query(...args);
      } catch (error) {
        const waited = Date.now() - started;
        if (!isTransientDbError(error) || waited + delay > retryMs) throw error;
        onRetry?.(error, waited);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  };
  pool.query = ((...args: unknown[]) => (typeof args[args.length - 1] === 'function' ? query(...args) : retrying(...args))) as typeof pool.query;
}

/** True when a PostgreSQL server accepts a connection at `url` within `timeoutMs`. */
export async function probePostgres(url: string, timeoutMs = 1000): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Creates database `name` on the server of `adminUrl` if it does not exist. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  if (!IDENTIFIER.test(name)) throw new Error(`invalid database name: ${name}`);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE "${name}"`).catch((error: { code?: string }) => {
      if (error.code !== '42P04') throw error; // created concurrently
    });
  } finally {
    await client.end();
  }
}
