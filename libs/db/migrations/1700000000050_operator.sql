-- Up Migration

-- Hosts an operator paused (the dashboard's pause), so the pause outlives Redis: a frontier
-- rebuilt from PostgreSQL restores it. host '*' is the whole crawl. paused_by names the API
-- token's fingerprint (never the token itself).
CREATE TABLE paused_hosts (
  host      text PRIMARY KEY CHECK (host <> ''),
  paused_at timestamptz NOT NULL DEFAULT now(),
  paused_by text
);

-- The oldest queued URL's age (how far behind the crawl is) without scanning urls.
CREATE INDEX urls_queued_since ON urls (updated_at) WHERE state = 'queued';

-- Fetch outcomes by error code (the dashboard) without scanning every page.
CREATE INDEX crawled_pages_error_code ON crawled_pages (error_code) WHERE error_code IS NOT NULL;

-- Down Migration
DROP INDEX crawled_pages_error_code;
DROP INDEX urls_queued_since;
DROP TABLE paused_hosts;
