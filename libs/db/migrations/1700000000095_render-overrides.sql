-- Up Migration

-- Operators' per-host rendering overrides (the dashboard's host page, the API), kept here so they
-- outlive Redis like pauses: Redis holds the copy every fetch stage reads, and a frontier rebuilt
-- from PostgreSQL puts these rows back into it. A host without a row follows TRAWL_RENDER.
-- set_by names the API token's fingerprint (never the token itself).
CREATE TABLE render_overrides (
  host   text PRIMARY KEY CHECK (host <> ''),
  mode   text NOT NULL CHECK (mode IN ('always', 'never')),
  set_at timestamptz NOT NULL DEFAULT now(),
  set_by text
);

-- Where a rendered page's DOM is in the content store (content-addressed, stored beside the
-- body by the fetch stage), so `trawl export warc` can write it as a conversion record as the
-- live WARC writer does. Null: not rendered, or recorded before this column.
ALTER TABLE crawled_pages ADD COLUMN rendered_key text;

-- Down Migration
ALTER TABLE crawled_pages DROP COLUMN rendered_key;
DROP TABLE render_overrides;
