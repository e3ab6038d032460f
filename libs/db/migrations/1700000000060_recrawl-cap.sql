-- Up Migration

-- The re-crawl sweep also takes pages not visited for TRAWL_RECRAWL_MAX_INTERVAL_S whatever their
-- next_crawl_at says (none, for pages recorded while re-crawl was off): found by their last visit.
CREATE INDEX crawled_pages_fetched ON crawled_pages (fetched_at);
CREATE INDEX crawled_pages_host_fetched ON crawled_pages (host, fetched_at);

-- Down Migration
DROP INDEX crawled_pages_host_fetched;
DROP INDEX crawled_pages_fetched;
