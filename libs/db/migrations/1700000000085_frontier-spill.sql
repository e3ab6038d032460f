-- Up Migration

-- A frontier larger than Redis memory (TRAWL_FRONTIER_REDIS_MAX_URLS): past the cap, a queued URL
-- waits here instead of in its host's back queue in Redis. Its row stays `queued` (in the
-- frontier, not yet fetched: every reader of `urls.state` counts it as before) and says where:
--   spill_band   its priority band (higher is served first); null: the URL is in Redis (or out
--                on a lease), as every queued URL was before
--   spill_entry  its back-queue entry as the frontier encodes it (depth, hops, flags, URL), so a
--                refill puts back exactly what was pushed
--   refill       the refill that has taken it and not yet settled: "p<partition>:<uuid>". Its
--                Redis step either landed (the row is then in Redis, and `spill_band` is cleared)
--                or is void (the tag is cleared and another refill takes the row)
-- A host's best spilled URLs come first: highest band, then discovery order (`id`).
ALTER TABLE urls ADD COLUMN spill_band smallint, ADD COLUMN spill_entry text, ADD COLUMN refill text;
CREATE INDEX urls_spilled ON urls (host, spill_band DESC, id) WHERE spill_band IS NOT NULL;
CREATE INDEX urls_refilling ON urls (refill) WHERE refill IS NOT NULL;

-- Down Migration
DROP INDEX urls_refilling;
DROP INDEX urls_spilled;
ALTER TABLE urls DROP COLUMN refill, DROP COLUMN spill_entry, DROP COLUMN spill_band;
