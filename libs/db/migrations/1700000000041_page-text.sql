-- Up Migration

-- What a page says about itself, for downstream users (trawl export pages): its title, meta
-- description, language (declared, or detected) and the size of its visible main text. The text
-- itself is stored beside the body, content-addressed in the same store (text_key).
ALTER TABLE crawled_pages
  ADD COLUMN title text,
  ADD COLUMN description text,
  ADD COLUMN language text,
  ADD COLUMN word_count integer,
  ADD COLUMN text_key text;

-- A page record carries its re-crawl statistics only when the crawl re-crawls; without them the
-- stored ones are kept (the upsert coalesces), so the columns accept NULL in the proposed row.
-- Readers take NULL as 0.
ALTER TABLE crawled_pages
  ALTER COLUMN change_visits DROP NOT NULL,
  ALTER COLUMN change_count DROP NOT NULL,
  ALTER COLUMN changed_s DROP NOT NULL,
  ALTER COLUMN unchanged_s DROP NOT NULL,
  ALTER COLUMN recrawl_failures DROP NOT NULL;

-- Down Migration
UPDATE crawled_pages SET change_visits = coalesce(change_visits, 0), change_count = coalesce(change_count, 0),
  changed_s = coalesce(changed_s, 0), unchanged_s = coalesce(unchanged_s, 0), recrawl_failures = coalesce(recrawl_failures, 0);
ALTER TABLE crawled_pages
  ALTER COLUMN change_visits SET NOT NULL, ALTER COLUMN change_count SET NOT NULL, ALTER COLUMN changed_s SET NOT NULL,
  ALTER COLUMN unchanged_s SET NOT NULL, ALTER COLUMN recrawl_failures SET NOT NULL;
ALTER TABLE crawled_pages DROP COLUMN title, DROP COLUMN description, DROP COLUMN language, DROP COLUMN word_count, DROP COLUMN text_key;
