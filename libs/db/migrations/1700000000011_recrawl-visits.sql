-- Up Migration

-- One row per re-crawl: a visit to a page that already had a due time. due_at is the
-- next_crawl_at the page had before the visit, fetched_at when the visit happened; a visit later
-- than due_at + a grace period missed its deadline (see freshness_report). Written by a trigger,
-- so every writer of crawled_pages logs its re-crawls without knowing about this table. Rows are
-- kept until prune_recrawl_visits() removes them.
CREATE TABLE recrawl_visits (
  url_hash   bytea NOT NULL,
  host       text NOT NULL,
  due_at     timestamptz NOT NULL,
  fetched_at timestamptz NOT NULL
);
CREATE INDEX recrawl_visits_fetched ON recrawl_visits (fetched_at);
CREATE INDEX recrawl_visits_host ON recrawl_visits (host, fetched_at);

-- A statement-level trigger with transition tables: one INSERT … SELECT per batch upsert, not a
-- function call per row. It fires for the UPDATE half of INSERT … ON CONFLICT DO UPDATE too.
-- search_path is pinned to this schema (the one the migration runs in), because callers use
-- schema-qualified names and their own search_path.
CREATE FUNCTION log_recrawl_visits() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
  INSERT INTO recrawl_visits (url_hash, host, due_at, fetched_at)
  SELECT n.url_hash, n.host, o.next_crawl_at, n.fetched_at
  FROM new_pages n JOIN old_pages o ON o.url_hash = n.url_hash
  WHERE o.next_crawl_at IS NOT NULL AND n.fetched_at > o.fetched_at;
  RETURN NULL;
END;
$$;

CREATE TRIGGER crawled_pages_log_recrawl_visits
  AFTER UPDATE ON crawled_pages
  REFERENCING OLD TABLE AS old_pages NEW TABLE AS new_pages
  FOR EACH STATEMENT EXECUTE FUNCTION log_recrawl_visits();

-- Deletes logged visits older than `keep` (run from a periodic job); returns how many.
CREATE FUNCTION prune_recrawl_visits(keep interval) RETURNS bigint
LANGUAGE sql
SET search_path FROM CURRENT
AS $$
  WITH gone AS (DELETE FROM recrawl_visits WHERE fetched_at < now() - keep RETURNING 1)
  SELECT count(*) FROM gone;
$$;

-- Down Migration
DROP FUNCTION prune_recrawl_visits(interval);
DROP TRIGGER crawled_pages_log_recrawl_visits ON crawled_pages;
DROP FUNCTION log_recrawl_visits();
DROP TABLE recrawl_visits;
