-- Up Migration

-- Sitemaps are fetched again on their own schedule (TRAWL_SITEMAP_REFRESH_INTERVAL_S), through
-- the frontier and the host gate like any URL. What each fetch found is kept here.
--   source          'robots' (a robots.txt Sitemap: line), 'guess' (/sitemap.xml of an origin
--                   whose robots.txt names none) or 'index' (a child of a sitemap index)
--   parent          the index that listed it ('index' only)
--   last_queued_at  when the sweep last pushed it into the frontier (the mark that keeps two
--                   sweeps from pushing it twice)
--   last_fetched_at, last_status, entries, truncated, error: the last fetch's outcome
ALTER TABLE sitemaps
  ADD COLUMN source text NOT NULL DEFAULT 'robots' CHECK (source IN ('robots', 'guess', 'index')),
  ADD COLUMN parent text,
  ADD COLUMN last_queued_at timestamptz,
  ADD COLUMN last_fetched_at timestamptz,
  ADD COLUMN last_status smallint,
  ADD COLUMN entries integer,
  ADD COLUMN truncated boolean NOT NULL DEFAULT false,
  ADD COLUMN error text;
CREATE INDEX sitemaps_queued ON sitemaps (last_queued_at NULLS FIRST);

-- Down Migration
DROP INDEX sitemaps_queued;
ALTER TABLE sitemaps DROP COLUMN source, DROP COLUMN parent, DROP COLUMN last_queued_at, DROP COLUMN last_fetched_at,
  DROP COLUMN last_status, DROP COLUMN entries, DROP COLUMN truncated, DROP COLUMN error;
