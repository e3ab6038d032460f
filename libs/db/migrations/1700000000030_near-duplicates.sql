-- Up Migration

-- Duplicates: a page whose body is identical (same sha256) to an earlier page's is an 'exact'
-- duplicate of it; one whose SimHash is within TRAWL_NEAR_DUP_DISTANCE bits of an indexed
-- page's is a 'near' duplicate. duplicate_of names the first page of the cluster (a url_hash);
-- NULL when the page is nobody's duplicate.
ALTER TABLE crawled_pages
  ADD COLUMN duplicate_of bytea CHECK (octet_length(duplicate_of) = 16),
  ADD COLUMN duplicate_kind text CHECK (duplicate_kind IN ('exact', 'near')),
  ADD COLUMN duplicate_distance smallint,
  ADD CONSTRAINT crawled_pages_duplicate_consistent
    CHECK ((duplicate_of IS NULL) = (duplicate_kind IS NULL) AND (duplicate_of IS NULL) = (duplicate_distance IS NULL));

-- Exact duplicates: the first page with a body, found by its hash.
CREATE INDEX crawled_pages_content_hash ON crawled_pages (content_hash, fetched_at) WHERE content_hash IS NOT NULL;
-- Every duplicate of a page (reports, exports).
CREATE INDEX crawled_pages_duplicate_of ON crawled_pages (duplicate_of) WHERE duplicate_of IS NOT NULL;

-- Near duplicates: each indexed page's 64-bit SimHash under its four 16-bit bands (band 0 = the
-- highest bits). Two fingerprints within 3 bits share at least one band, so a lookup reads four
-- index ranges and checks the exact distance on what it finds, never the whole table. Only the
-- first page of each cluster is indexed.
CREATE TABLE simhash_bands (
  band       smallint NOT NULL CHECK (band BETWEEN 0 AND 3),
  value      integer  NOT NULL CHECK (value BETWEEN 0 AND 65535),
  url_hash   bytea    NOT NULL CHECK (octet_length(url_hash) = 16),
  simhash    bigint   NOT NULL,
  indexed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (band, value, url_hash)
);
-- Replacing a page's fingerprint (a re-crawl) deletes its rows by url_hash.
CREATE INDEX simhash_bands_url ON simhash_bands (url_hash);

-- Down Migration
DROP TABLE simhash_bands;
DROP INDEX crawled_pages_duplicate_of;
DROP INDEX crawled_pages_content_hash;
ALTER TABLE crawled_pages
  DROP CONSTRAINT crawled_pages_duplicate_consistent,
  DROP COLUMN duplicate_distance,
  DROP COLUMN duplicate_kind,
  DROP COLUMN duplicate_of;
