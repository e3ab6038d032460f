-- Up Migration

-- A number per URL in the order URLs were inserted, so a seen-set snapshot can say which URLs it
-- covers (every id up to the highest one taken before the filter was read) and a rebuild adds
-- only the URLs recorded after it. Adding the column fills the rows already there (a table
-- rewrite: on a large crawl, run it while the crawl is stopped).
ALTER TABLE urls ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
CREATE UNIQUE INDEX urls_id ON urls (id);

-- Down Migration
DROP INDEX urls_id;
ALTER TABLE urls DROP COLUMN id;
