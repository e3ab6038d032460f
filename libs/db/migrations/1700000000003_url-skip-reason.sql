-- Up Migration

-- Why a URL was never fetched on purpose (state 'skipped' at discovery: robots.txt, …).
ALTER TABLE urls ADD COLUMN skip_reason text;

-- Down Migration
ALTER TABLE urls DROP COLUMN skip_reason;
