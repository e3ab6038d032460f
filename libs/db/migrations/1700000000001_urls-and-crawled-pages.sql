-- Up Migration

-- Every URL trawl has discovered, once (the exact half of the seen-set). Discovery inserts
-- with ON CONFLICT DO NOTHING; recording a fetch updates `state`.
--   new     inserted, not yet confirmed in the frontier (a crash between insert and push leaves
--           it here; the dispatcher's repair sweep pushes such rows again)
--   queued  in the frontier (or leased out)
--   done    fetched and recorded (any HTTP status)
--   failed  given up after retries (dead-lettered)
--   skipped never fetched on purpose (robots, scope, content type, …)
CREATE TABLE urls (
  url_hash        bytea PRIMARY KEY CHECK (octet_length(url_hash) = 16),
  url             text NOT NULL,
  host            text NOT NULL,
  depth           integer NOT NULL,
  state           text NOT NULL CHECK (state IN ('new', 'queued', 'done', 'failed', 'skipped')),
  discovered_at   timestamptz NOT NULL DEFAULT now(),
  discovered_from bytea,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX urls_unqueued ON urls (discovered_at) WHERE state = 'new';
CREATE INDEX urls_host ON urls (host);

-- One row per fetched page (seed schema "crawled_pages"), upserted on every fetch.
CREATE TABLE crawled_pages (
  url_hash           bytea PRIMARY KEY CHECK (octet_length(url_hash) = 16),
  host               text NOT NULL,
  url                text NOT NULL,
  depth              integer,
  http_status        smallint,
  content_type       text,
  content_hash       text,
  simhash            bigint,
  storage_key        text,
  fetched_at         timestamptz NOT NULL,
  last_crawled_at    timestamptz NOT NULL,
  content_length     integer,
  truncated          boolean NOT NULL DEFAULT false,
  fetch_ms           integer,
  redirect_to        text,
  canonical_url      text,
  links_found        integer,
  error_code         text,
  error_message      text,
  change_frequency_s integer,
  last_changed_at    timestamptz,
  next_crawl_at      timestamptz,
  etag               text,
  last_modified      text
);
CREATE INDEX crawled_pages_next_crawl ON crawled_pages (next_crawl_at);
CREATE INDEX crawled_pages_host ON crawled_pages (host, next_crawl_at);

-- Down Migration
DROP TABLE crawled_pages;
DROP TABLE urls;
