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
 * How far ahead of its due time a page is taken when its host has more pages due than slots (the
 * per-host refresh subset): a host's homepage a day, its section pages (one link down) six hours,
 * pages two links down an hour. A large site thus has its entry points — where new and changed
 * pages are linked from — refreshed first, and the new links found there come with them; deeper
 * pages follow in due order. No page starves: the lead is bounded, so one overdue longer than it
 * goes first whatever its depth.
 */
const REFRESH_LEAD_S = `CASE WHEN c.depth = 0 OR c.url ~ '^https?://[^/]+/?$' THEN 86400 WHEN c.depth = 1 THEN 21600 WHEN c.depth = 2 THEN 3600 ELSE 0 END`;

/**
 * Takes up to `limit` due pages, at most `perHost` of any one host (the most urgent first: by due
 * time, less the refresh lead of homepages and section pages, see REFRESH_LEAD_S), and moves
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
  const urgency = `${dueAt} - make_interval(secs => ${REFRESH_LEAD_S})`;
  const { rows } = await pool.query<DueRow>(
    `WITH due AS (
       SELECT p.url_hash, p.urgency
       FROM (
         SELECT host FROM ${t('crawled_pages')} WHERE next_crawl_at <= now()
         UNION SELECT host FROM ${t('crawled_pages')} WHERE fetched_at <= now() - make_interval(secs => $3)
       ) h
       CROSS JOIN LATERAL (
         SELECT c.url_hash, ${urgency} AS urgency FROM ${t('crawled_pages')} c
         WHERE c.host = h.host AND (c.next_crawl_at <= now() OR c.fetched_at <= now() - make_interval(secs => $3))
         ORDER BY urgency LIMIT $2
       ) p
     ),
     taken AS (
       SELECT u.url_hash FROM ${t('urls')} u JOIN due d ON d.url_hash = u.url_hash
       WHERE u.state IN ('done', 'failed', 'skipped')
       ORDER BY d.urgency
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
