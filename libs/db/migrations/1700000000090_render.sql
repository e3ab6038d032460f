-- Up Migration

-- Whether a page's links, text and fingerprint came from the DOM a headless browser rendered
-- (its HTTP response is still what the row's status, type, hash and storage key describe), and
-- why the crawl did or did not render it (the classifier's reason, the host's learnt verdict, a
-- render's failure). render_reason is null for a page rendering was never considered for.
ALTER TABLE crawled_pages ADD COLUMN rendered boolean NOT NULL DEFAULT false;
ALTER TABLE crawled_pages ADD COLUMN render_reason text;

-- Down Migration
ALTER TABLE crawled_pages DROP COLUMN render_reason;
ALTER TABLE crawled_pages DROP COLUMN rendered;
