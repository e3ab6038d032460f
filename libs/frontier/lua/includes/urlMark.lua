--- @include "entry"
-- A URL being recorded: when an attempt has fetched a lease's URL and goes on to store and record
-- it (releaseHost's `fetched` mark), the `fetched` hash also maps the URL itself to that lease:
-- field "u:<url>" -> lease id. Two leases can carry one URL (a copy restored by a rebuild beside
-- one pushed after the loss, a repair sweep racing a rebuild, a dead-letter re-run), and the
-- second must not pass the gate while the first is still recording — else its check of
-- PostgreSQL comes too early and the URL is fetched twice. The field goes with the lease's ack
-- or expiry; one left by an attempt that stopped renewing is dropped by the next gate that reads it.
--
-- The URL comes from a queue entry, made whole (see includes/entry), so every copy names it alike.
local function urlMark(host, entry)
  local url = entry and entryUrl(host, entry)
  return url and 'u:' .. url
end

-- The URL mark of a lease from its lease data ("<host>\n<band>\n<entry>"), or nil.
local function leaseUrlMark(data)
  if not data then return nil end
  local host, entry = string.match(data, '^([^\n]*)\n[^\n]*\n(.*)$')
  return urlMark(host, entry)
end

-- Drops the URL mark if this lease holds it.
local function clearUrlMark(fetchedKey, data, id)
  local mark = leaseUrlMark(data)
  if mark and redis.call('HGET', fetchedKey, mark) == id then redis.call('HDEL', fetchedKey, mark) end
end

-- Copies of one URL whose Verify copy went first: a lease flagged Verify (its URL came back after a
-- crash, or a process stage redid a page whose first try may still be pushing its links) can be
-- fetched and acknowledged before the copy that was not flagged, which would then pass the gate
-- with nothing to tell it to ask PostgreSQL. So the ack of a Verify lease leaves its URL mark in
-- <base>verified (ZSET, score = the ack's time, kept VERIFIED_KEEP_MS), and the gate tells any
-- lease of that URL to ask PostgreSQL first (acquireHost's `verify`).
local VERIFIED_KEEP_MS = 600000

-- The URL mark of a lease flagged Verify, from its lease data ("<host>\n<band>\n<entry>"), or nil.
local function verifyLeaseMark(data)
  if not data then return nil end
  local host, entry = string.match(data, '^([^\n]*)\n[^\n]*\n(.*)$')
  local flags = entry and string.match(entry, '^[%d/]+ %d+ (%d+) ')
  if not flags or bit.band(tonumber(flags), VERIFY) == 0 then return nil end
  return urlMark(host, entry)
end
