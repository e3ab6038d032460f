-- Up Migration

-- Sitemap URLs announced by robots.txt (RFC 9309 §2.2.4 "Sitemap:"), for the freshness work.
CREATE TABLE sitemaps (
  url           text PRIMARY KEY,
  origin        text NOT NULL,
  discovered_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sitemaps_origin ON sitemaps (origin);

-- Down Migration
DROP TABLE sitemaps;
