-- Up Migration

-- What the page said about itself (meta robots / X-Robots-Tag) and how its body was read.
ALTER TABLE crawled_pages
  ADD COLUMN charset text,
  ADD COLUMN noindex boolean NOT NULL DEFAULT false,
  ADD COLUMN nofollow boolean NOT NULL DEFAULT false,
  ADD COLUMN body_skipped boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE crawled_pages DROP COLUMN charset, DROP COLUMN noindex, DROP COLUMN nofollow, DROP COLUMN body_skipped;
