-- Up Migration

-- The outcome each page row records (done, failed, skipped), beside the fetched_at and
-- next_crawl_at it was recorded with, so a page upsert can tell a late, stale record from news:
--   * a record fetched before the row's fetched_at changes nothing;
--   * within one crawl generation, done is final: a failed or skipped record replaces a done row
--     only once the page was due again (fetched at or after its next_crawl_at; a done row
--     without next_crawl_at is never replaced that way).
ALTER TABLE crawled_pages
  ADD COLUMN state text CHECK (state IN ('new', 'queued', 'done', 'failed', 'skipped'));
UPDATE crawled_pages p SET state = u.state FROM urls u WHERE u.url_hash = p.url_hash;

-- Down Migration
ALTER TABLE crawled_pages DROP COLUMN state;
