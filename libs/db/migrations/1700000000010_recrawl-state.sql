-- Up Migration

-- What the re-crawl policy keeps per page between visits (@trawl/recrawl RecrawlState). The
-- change rate is estimated from four sums over the visits that compared the content with the
-- previous copy; each is multiplied by a decay factor at every such visit, so old behaviour
-- fades (about the last 20 visits count). Fractional, hence double precision.
--   change_visits       decayed count of compared visits
--   change_count        decayed count of those that found the content changed
--   changed_s           decayed sum of the intervals (seconds since the previous check) before
--                       visits that found a change
--   unchanged_s         the same for visits that found none
--   checked_at          last visit that saw the content (2xx or 304); fetched_at moves on any outcome
--   recrawl_interval_s  current revisit interval before jitter, seconds
--   recrawl_failures    consecutive failed visits (drives the failure back-off)
-- change_frequency_s holds the estimated mean change interval (NULL while no change was seen)
-- and next_crawl_at the due time, as before.
ALTER TABLE crawled_pages
  ADD COLUMN change_visits double precision NOT NULL DEFAULT 0,
  ADD COLUMN change_count double precision NOT NULL DEFAULT 0,
  ADD COLUMN changed_s double precision NOT NULL DEFAULT 0,
  ADD COLUMN unchanged_s double precision NOT NULL DEFAULT 0,
  ADD COLUMN checked_at timestamptz,
  ADD COLUMN recrawl_interval_s double precision,
  ADD COLUMN recrawl_failures integer NOT NULL DEFAULT 0;

-- Down Migration
ALTER TABLE crawled_pages
  DROP COLUMN change_visits, DROP COLUMN change_count, DROP COLUMN changed_s, DROP COLUMN unchanged_s,
  DROP COLUMN checked_at, DROP COLUMN recrawl_interval_s, DROP COLUMN recrawl_failures;
