import type pg from 'pg';
import type { DuePage } from './recrawl-sweep.js';

/** How the crawl learnt of a sitemap: a robots.txt `Sitemap:` line, a guess (/sitemap.xml), an index. */
export type SitemapSource = 'robots' | 'guess' | 'index';

export interface SitemapPlace {
  source: SitemapSource;
  origin: string;
  /** The index that listed it, if any. */
  parent: string | null;
  /** The origin of the robots.txt that named it or its index, else null. */
  robotsOrigin: string | null;
}

/**
 * Sitemaps between fetches (the `sitemaps` table): which are due for a refresh, what a fetch
 * found, the children of an index, and the pages a sitemap says changed. Every function runs one
 * statement.
 */
export class Sitemaps {
  private readonly t: { sitemaps: string; urls: string; pages: string };

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    this.t = { sitemaps: `"${schema}".sitemaps`, urls: `"${schema}".urls`, pages: `"${schema}".crawled_pages` };
  }

  /** Records sitemaps to fetch (new ones only; a known one keeps its schedule). */
  async add(origin: string, urls: readonly string[], source: SitemapSource, parent: string | null = null): Promise<void> {
    if (urls.length === 0) return;
    await this.pool.query(
      `INSERT INTO ${this.t.sitemaps} (url, origin, source, parent) SELECT u, $2, $3, $4 FROM unnest($1::text[]) AS x(u)
       ON CONFLICT (url) DO UPDATE SET last_seen_at = now()`,
      [[...new Set(urls)], origin, source, parent],
    );
  }

  /**
   * Takes up to `limit` sitemaps never fetched or not queued for `refreshMs`, marking them queued
   * in the same statement (two sweeps never take one twice).
   */
  async takeDue(limit: number, refreshMs: number): Promise<{ url: string; origin: string }[]> {
    const { rows } = await this.pool.query<{ url: string; origin: string }>(
      `WITH due AS (
         SELECT url FROM ${this.t.sitemaps}
         WHERE last_queued_at IS NULL OR last_queued_at < now() - make_interval(secs => $2::double precision / 1000)
         ORDER BY last_queued_at NULLS FIRST LIMIT $1
         FOR UPDATE SKIP LOCKED
       )
       UPDATE ${this.t.sitemaps} s SET last_queued_at = now() FROM due WHERE s.url = due.url
       RETURNING s.url, s.origin`,
      [limit, refreshMs],
    );
    return rows;
  }

  /** What fetching a sitemap found. */
  async recordFetch(url: string, outcome: { status: number | null; entries: number; truncated: boolean; error: string | null }): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.t.sitemaps} SET last_fetched_at = now(), last_status = $2, entries = $3, truncated = $4, error = $5 WHERE url = $1`,
      [url, outcome.status, outcome.entries, outcome.truncated, outcome.error === null ? null : outcome.error.slice(0, 1000)],
    );
  }

  /**
   * Where a sitemap came from: its source and origin (the robots.txt's origin for one robots.txt
   * named, the index's for a child), the index that listed it, and the robots.txt origin that
   * vouches for it — its own when robots.txt named it, its index's when that index was named by
   * robots.txt — or null. Null for an unknown sitemap.
   */
  async placeOf(url: string): Promise<SitemapPlace | null> {
    const { rows } = await this.pool.query<{ source: SitemapSource; origin: string; parent: string | null; parent_source: string | null; parent_origin: string | null }>(
      `SELECT s.source, s.origin, s.parent, p.source AS parent_source, p.origin AS parent_origin
       FROM ${this.t.sitemaps} s LEFT JOIN ${this.t.sitemaps} p ON p.url = s.parent WHERE s.url = $1`,
      [url],
    );
    const row = rows[0];
    if (!row) return null;
    const robotsOrigin = row.source === 'robots' ? row.origin : row.source === 'index' && row.parent_source === 'robots' ? row.parent_origin : null;
    return { source: row.source, origin: row.origin, parent: row.parent, robotsOrigin };
  }

  /** When each page was last seen with content (2xx or 304), by latin1 fingerprint; unknown pages are absent. */
  async lastChecked(hashes: readonly Buffer[]): Promise<Map<string, number | null>> {
    const out = new Map<string, number | null>();
    if (hashes.length === 0) return out;
    const { rows } = await this.pool.query<{ url_hash: Buffer; checked: Date | null }>(
      `SELECT u.url_hash, COALESCE(p.checked_at, p.fetched_at) AS checked
       FROM ${this.t.urls} u LEFT JOIN ${this.t.pages} p ON p.url_hash = u.url_hash WHERE u.url_hash = ANY($1::bytea[])`,
      [hashes],
    );
    for (const r of rows) out.set(r.url_hash.toString('latin1'), r.checked?.getTime() ?? null);
    return out;
  }

  /**
   * Takes these pages for an immediate re-crawl: like the re-crawl sweep, only pages in a settled
   * state (done, failed, skipped) are taken — one already queued is left alone — and their URLs go
   * back to `new` until the frontier confirms them.
   */
  async takePages(hashes: readonly Buffer[]): Promise<DuePage[]> {
    if (hashes.length === 0) return [];
    const { rows } = await this.pool.query<{ url_hash: Buffer; url: string; host: string; depth: number }>(
      `WITH taken AS (
         SELECT url_hash FROM ${this.t.urls} WHERE url_hash = ANY($1::bytea[]) AND state IN ('done', 'failed', 'skipped')
         FOR UPDATE SKIP LOCKED
       )
       UPDATE ${this.t.urls} u SET state = 'new', updated_at = now() FROM taken WHERE u.url_hash = taken.url_hash
       RETURNING u.url_hash, u.url, u.host, u.depth`,
      [hashes],
    );
    return rows.map((r) => ({ hash: r.url_hash, url: r.url, host: r.host, depth: r.depth, nextCrawlAt: null, changeFrequencyS: null, checkedAt: null, failures: 0 }));
  }
}
