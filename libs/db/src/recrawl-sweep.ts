import type pg from 'pg';

/** A page the re-crawl sweep took: its URL is back to `new` until the frontier confirms it. */
export interface DuePage {
  hash: Buffer;
  url: string;
  host: string;
  depth: number;
  nextCrawlAt: number | null;
  changeFrequencyS: number | null;
  checkedAt: number | null;
  failures: number;
}

interface DueRow {
  url_hash: Buffer;
  url: string;
  host: string;
  depth: number;
  next_crawl_at: Date | null;
  change_frequency_s: number | null;
  checked_at: Date | null;
  recrawl_failures: number | null;
}

/**
 * Takes up to `limit` due pages, at most `perHost` of any one host (oldest due first), and moves
 * their URLs from a settled state (done, failed, skipped) back to `new` in the same statement —
 * the mark that keeps a page from being taken twice. A page is due when its `next_crawl_at` has
 * passed, or when it has not been visited (`fetched_at`, any outcome) for `maxIntervalS` whatever
 * its `next_crawl_at` says — `isDue` of @trawl/recrawl: a page recorded while re-crawl was off
 * (no due time) or scheduled by a policy with a longer maximum is still checked that often. Rows
 * another sweep is taking right now are skipped (`FOR UPDATE SKIP LOCKED`), so two schedulers
 * sweeping at once never both inject a page. Pages already taken (queued, not yet fetched again)
 * still hold their host's slots, so a host's re-crawls never run more than `perHost` ahead of its
 * fetches. A crash before the frontier has them leaves them `new`, and the repair sweep pushes them.
 */
export async function takeDuePages(pool: pg.Pool, schema: string, options: { limit: number; perHost: number; maxIntervalS: number }): Promise<DuePage[]> {
  const t = (name: string) => `"${schema}".${name}`;
  // Each page's due time under the cap; both branches of the OR are index scans.
  const dueAt = `LEAST(COALESCE(c.next_crawl_at, 'infinity'), c.fetched_at + make_interval(secs => $3))`;
  const { rows } = await pool.query<DueRow>(
    `WITH due AS (
       SELECT p.url_hash, p.due_at
       FROM (
         SELECT host FROM ${t('crawled_pages')} WHERE next_crawl_at <= now()
         UNION SELECT host FROM ${t('crawled_pages')} WHERE fetched_at <= now() - make_interval(secs => $3)
       ) h
       CROSS JOIN LATERAL (
         SELECT c.url_hash, ${dueAt} AS due_at FROM ${t('crawled_pages')} c
         WHERE c.host = h.host AND (c.next_crawl_at <= now() OR c.fetched_at <= now() - make_interval(secs => $3))
         ORDER BY due_at LIMIT $2
       ) p
     ),
     taken AS (
       SELECT u.url_hash FROM ${t('urls')} u JOIN due d ON d.url_hash = u.url_hash
       WHERE u.state IN ('done', 'failed', 'skipped')
       ORDER BY d.due_at
       LIMIT $1
       FOR UPDATE OF u SKIP LOCKED
     ),
     marked AS (
       UPDATE ${t('urls')} u SET state = 'new', updated_at = now()
       FROM taken WHERE u.url_hash = taken.url_hash
       RETURNING u.url_hash, u.url, u.host, u.depth
     )
     SELECT m.url_hash, m.url, m.host, m.depth, p.next_crawl_at, p.change_frequency_s, p.checked_at, p.recrawl_failures
     FROM marked m JOIN ${t('crawled_pages')} p ON p.url_hash = m.url_hash
     ORDER BY p.next_crawl_at NULLS FIRST`,
    [options.limit, options.perHost, options.maxIntervalS],
  );
  return rows.map((r) => ({
    hash: r.url_hash,
    url: r.url,
    host: r.host,
    depth: r.depth,
    nextCrawlAt: r.next_crawl_at?.getTime() ?? null,
    changeFrequencyS: r.change_frequency_s,
    checkedAt: r.checked_at?.getTime() ?? null,
    failures: r.recrawl_failures ?? 0,
  }));
}

/** The validators stored for pages (for a re-crawl's conditional GET), by latin1 fingerprint. */
export async function pageValidators(pool: pg.Pool, schema: string, hashes: readonly Buffer[]): Promise<Map<string, { etag: string | null; lastModified: string | null }>> {
  const out = new Map<string, { etag: string | null; lastModified: string | null }>();
  if (hashes.length === 0) return out;
  const { rows } = await pool.query<{ url_hash: Buffer; etag: string | null; last_modified: string | null }>(
    `SELECT url_hash, etag, last_modified FROM "${schema}".crawled_pages
     WHERE url_hash = ANY($1::bytea[]) AND (etag IS NOT NULL OR last_modified IS NOT NULL) AND storage_key IS NOT NULL`,
    [hashes],
  );
  for (const r of rows) out.set(r.url_hash.toString('latin1'), { etag: r.etag, lastModified: r.last_modified });
  return out;
}
