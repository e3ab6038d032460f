import type pg from 'pg';

/**
 * The re-crawl side of crawled_pages: each page's change statistics and schedule
 * (migration 1700000000010), and the freshness report (1700000000011, 1700000000012). Every
 * method takes a batch or runs one statement.
 */

/** A page's re-crawl state as stored (field meanings: @trawl/recrawl RecrawlState). */
export interface StoredRecrawlState {
  visits: number;
  changes: number;
  changedS: number;
  unchangedS: number;
  checkedAt: number | null;
  lastChangedAt: number | null;
  intervalS: number | null;
  failures: number;
}

/** What a visit needs to know about a page before deciding its next crawl. */
export interface PageRecrawlRecord extends StoredRecrawlState {
  contentHash: string | null;
  /** The due time this visit answers (null when the page was never scheduled). */
  nextCrawlAt: number | null;
  /** The last visit of any outcome. */
  fetchedAt: number;
}

/** A page's new re-crawl state, estimate and due time, after a visit. */
export interface RecrawlUpdate extends StoredRecrawlState {
  hash: Buffer;
  changeFrequencyS: number | null;
  nextCrawlAt: number | null;
}

/** One row of freshness_report(): a host, or all hosts together (host null). */
export interface FreshnessRow {
  host: string | null;
  pages: number;
  scheduled: number;
  changing: number;
  medianChangeIntervalS: number | null;
  overdue: number;
  oldestOverdueS: number | null;
  recrawls: number;
  late: number;
  deadlineMissRate: number | null;
}

export interface FreshnessQuery {
  /** A re-crawl later than its due time + grace missed its deadline. Default 5 minutes. */
  graceMs?: number;
  /** Which re-crawls count: those of the last `recentMs` before `at`. Default 1 day. */
  recentMs?: number;
  /** The report's "now", epoch ms. Default: the server's now(). */
  at?: number;
}

interface FreshnessDbRow {
  host: string | null;
  pages: string;
  scheduled: string;
  changing: string;
  median_change_interval_s: number | null;
  overdue: string;
  oldest_overdue_s: number | null;
  recrawls: string;
  late: string;
  deadline_miss_rate: number | null;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
const ms = (date: Date | null): number | null => (date === null ? null : date.getTime());
const date = (value: number | null): Date | null => (value === null ? null : new Date(value));

function freshnessRow(r: FreshnessDbRow): FreshnessRow {
  return {
    host: r.host,
    pages: Number(r.pages),
    scheduled: Number(r.scheduled),
    changing: Number(r.changing),
    medianChangeIntervalS: r.median_change_interval_s,
    overdue: Number(r.overdue),
    oldestOverdueS: r.oldest_overdue_s,
    recrawls: Number(r.recrawls),
    late: Number(r.late),
    deadlineMissRate: r.deadline_miss_rate,
  };
}

/** Freshness queries over one crawl namespace (a PostgreSQL schema). */
export class Freshness {
  private readonly t: { pages: string; visits: string; schema: string };

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    if (!IDENTIFIER.test(schema)) throw new Error(`invalid schema name: ${schema}`);
    this.t = { pages: `"${schema}".crawled_pages`, visits: `"${schema}".recrawl_visits`, schema: `"${schema}"` };
  }

  /** The pages' stored re-crawl records, by latin1 fingerprint (pages never recorded are absent). */
  async pageStates(hashes: readonly Buffer[]): Promise<Map<string, PageRecrawlRecord>> {
    const result = new Map<string, PageRecrawlRecord>();
    if (hashes.length === 0) return result;
    const { rows } = await this.pool.query<{
      url_hash: Buffer;
      content_hash: string | null;
      change_visits: number;
      change_count: number;
      changed_s: number;
      unchanged_s: number;
      checked_at: Date | null;
      last_changed_at: Date | null;
      recrawl_interval_s: number | null;
      recrawl_failures: number;
      next_crawl_at: Date | null;
      fetched_at: Date;
    }>(
      `SELECT url_hash, content_hash, change_visits, change_count, changed_s, unchanged_s, checked_at, last_changed_at,
              recrawl_interval_s, recrawl_failures, next_crawl_at, fetched_at
       FROM ${this.t.pages} WHERE url_hash = ANY($1::bytea[])`,
      [hashes],
    );
    for (const r of rows) {
      result.set(r.url_hash.toString('latin1'), {
        contentHash: r.content_hash,
        visits: r.change_visits,
        changes: r.change_count,
        changedS: r.changed_s,
        unchangedS: r.unchanged_s,
        checkedAt: ms(r.checked_at),
        lastChangedAt: ms(r.last_changed_at),
        intervalS: r.recrawl_interval_s,
        failures: r.recrawl_failures,
        nextCrawlAt: ms(r.next_crawl_at),
        fetchedAt: r.fetched_at.getTime(),
      });
    }
    return result;
  }

  /**
   * Stores the pages' new re-crawl state, estimate and due time (one statement). Pages must
   * already have their crawled_pages row (the fetch record is written first); others are ignored.
   * When a fingerprint repeats, its last update wins.
   */
  async savePageStates(updates: readonly RecrawlUpdate[]): Promise<void> {
    if (updates.length === 0) return;
    const rows = [...new Map(updates.map((u) => [u.hash.toString('latin1'), u])).values()];
    await this.pool.query(
      `UPDATE ${this.t.pages} AS p SET
         change_visits = x.visits, change_count = x.changes, changed_s = x.changed_s, unchanged_s = x.unchanged_s,
         checked_at = x.checked_at, last_changed_at = x.last_changed_at, recrawl_interval_s = x.interval_s,
         recrawl_failures = x.failures, change_frequency_s = x.freq, next_crawl_at = x.next_crawl_at
       FROM unnest($1::bytea[], $2::float8[], $3::float8[], $4::float8[], $5::float8[], $6::timestamptz[], $7::timestamptz[],
                   $8::float8[], $9::int[], $10::int[], $11::timestamptz[])
         AS x(h, visits, changes, changed_s, unchanged_s, checked_at, last_changed_at, interval_s, failures, freq, next_crawl_at)
       WHERE p.url_hash = x.h`,
      [
        rows.map((r) => r.hash),
        rows.map((r) => r.visits),
        rows.map((r) => r.changes),
        rows.map((r) => r.changedS),
        rows.map((r) => r.unchangedS),
        rows.map((r) => date(r.checkedAt)),
        rows.map((r) => date(r.lastChangedAt)),
        rows.map((r) => r.intervalS),
        rows.map((r) => r.failures),
        rows.map((r) => (r.changeFrequencyS === null ? null : Math.round(Math.min(r.changeFrequencyS, 2 ** 31 - 1)))),
        rows.map((r) => date(r.nextCrawlAt)),
      ],
    );
  }

  /** freshness_report(): one row per host (sorted by host), and all hosts together. */
  async report(query: FreshnessQuery = {}): Promise<{ total: FreshnessRow; hosts: FreshnessRow[] }> {
    const rows = await this.query(query, null);
    return { total: rows.find((r) => r.host === null)!, hosts: rows.filter((r) => r.host !== null) };
  }

  /** One host's row (zeros and nulls when the host has no pages and no re-crawls). */
  async host(host: string, query: FreshnessQuery = {}): Promise<FreshnessRow> {
    // Restricted to one host, the all-hosts row is that host's.
    const rows = await this.query(query, host);
    return { ...rows.find((r) => r.host === null)!, host };
  }

  /** Deletes logged re-crawls older than `keepMs`; returns how many. */
  async pruneVisits(keepMs: number): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT ${this.t.schema}.prune_recrawl_visits(make_interval(secs => $1::double precision / 1000)) AS n`,
      [keepMs],
    );
    return Number(rows[0]?.n ?? 0);
  }

  private async query(query: FreshnessQuery, host: string | null): Promise<FreshnessRow[]> {
    const { rows } = await this.pool.query<FreshnessDbRow>(
      `SELECT * FROM ${this.t.schema}.freshness_report(
         grace => make_interval(secs => $1::double precision / 1000),
         recent => make_interval(secs => $2::double precision / 1000),
         as_of => coalesce($3::timestamptz, now()),
         only_host => $4::text)`,
      [query.graceMs ?? 300_000, query.recentMs ?? 86_400_000, date(query.at ?? null), host],
    );
    return rows.map(freshnessRow);
  }
}
