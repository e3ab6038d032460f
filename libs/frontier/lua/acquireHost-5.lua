--[[
  acquireHost (v4): the host gate, run by a worker immediately before a fetch. Whatever way a job
  arrived (dispatch, retry, dead-letter re-run, manual job), the fetch happens only if this lease
  holds the host, no other attempt is fetching from it, and the host's due time has passed.

  KEYS[1] ready  KEYS[2] leases  KEYS[3] leaseData  KEYS[4] tombstones  KEYS[5] stats
  ARGV[1] key base   ARGV[2] host   ARGV[3] lease id   ARGV[4] attempt token (unique per try)
  ARGV[5] now (ms)   ARGV[6] lease ms   ARGV[7] fetch hold ms (how long the token is held at most)
  ARGV[8] band       ARGV[9] entry (to adopt a job that has no lease)   ARGV[10] busy retry ms
  ARGV[11] holder: the worker process's member id ('' = none), recorded with the attempt token in
           <base>holders while this lease holds the host, so that its holds end with its
           heartbeat (see releaseHolder) rather than with the lease
  Returns { code, atMs, streak, backoffMs, blocks, level, verify }
    1 OK      fetch now; the token is held until now + fetch hold ms or release. atMs is the
              host's due time (when politeness allowed this fetch); streak and backoffMs are the
              host's health (consecutive failures, current back-off) for the politeness model,
              and its refusals in a row and proxy tier level for the block detector, all
              written back by releaseHost. verify = 1: a Verify copy of this URL was
              acknowledged lately (see includes/urlMark): ask PostgreSQL before fetching, as a
              lease flagged Verify does
    2 NOT_DUE this lease now holds the host; run again at atMs (the host's due time)
    3 BUSY    another live lease or attempt holds the host, or is recording this URL; run again
              at atMs
    4 STALE   this lease expired (its URL went back to the queue), was acknowledged, or was handed
              to the process stage; drop the job
    5 PAUSED  an operator paused this host (or the whole crawl: member '*' of <base>paused):
              the URL went back to the front of its queue (as an expired lease would, with a
              tombstone), where it waits for the resume; drop the job
]]
--- @include "requeueLease"
--- @include "urlMark"
local base, host, id, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now = tonumber(ARGV[5])
local leaseMs = tonumber(ARGV[6])
local holdMs = tonumber(ARGV[7])
local busyRetryMs = tonumber(ARGV[10])
local hostKey = base .. 'h:' .. host

if not redis.call('ZSCORE', KEYS[2], id) then
  if redis.call('ZSCORE', KEYS[4], id) then return { 4, 0 } end
  -- A lease the dispatcher issued (`p<n>-<seq>`, the counter already past it) that is no longer
  -- live was acknowledged or expired: a job still carrying it (redelivered after its worker died
  -- between the ack and BullMQ's completion) is stale, never adopted and fetched again. With no
  -- counter at all, the partition's Redis data was lost since the lease was issued: stale too
  -- (its URL is PostgreSQL's to restore), never adopted onto a host whose state is gone.
  local issued = tonumber(string.match(id, '^' .. (string.match(base, '{(p%d+)}:$') or '') .. '%-(%d+)$') or '')
  if issued and issued <= tonumber(redis.call('GET', base .. 'seq') or issued) then return { 4, 0 } end
  -- No lease and no tombstone: a job re-run from the dead-letter queue or added by hand.
  -- Adopt it so that a dead worker running it still gives the URL back.
  redis.call('HSET', KEYS[3], id, host .. '\n' .. ARGV[8] .. '\n' .. ARGV[9])
  redis.call('ZADD', KEYS[2], now + leaseMs, id)
end

-- Operator pause: a paused host is never fetched, whatever way its job arrived. The lease (live
-- or just adopted) returns its URL to the frontier, which keeps it until the host is resumed.
local pausedKey = base .. 'paused'
if redis.call('SISMEMBER', pausedKey, host) == 1 or redis.call('SISMEMBER', pausedKey, '*') == 1 then
  requeueLease(base, { ready = KEYS[1], leases = KEYS[2], leaseData = KEYS[3], tombstones = KEYS[4], stats = KEYS[5] }, id, now)
  return { 5, 0 }
end

-- This lease's URL was already fetched by another attempt that is still finishing it (storing,
-- recording; see releaseHost's `fetched`, "<token> <alive until ms>", kept fresh by the attempt's
-- lease renewals): BullMQ handed the job over because its lock lapsed (a Redis restart, a
-- stalled event loop), not because the attempt died. Wait while that attempt is alive: it acks
-- (this job is then stale) or it stops renewing (it died between its fetch and its record, and
-- the URL is fetched again: at-least-once).
local mark = redis.call('HGET', base .. 'fetched', id)
-- Handed to the process stage (handOff): the fetch of this lease is done; a job of it that turns
-- up again (redelivered after its worker died) has nothing left to do.
if mark and string.sub(mark, 1, 7) == 'handed:' then return { 4, 0 } end
if mark then
  local by, alive = string.match(mark, '^(.*) (%d+)$')
  if by ~= token and tonumber(alive or '0') > now then return { 3, tonumber(alive) + busyRetryMs } end
end

-- The same URL under another lease (two copies of it were queued: see includes/urlMark) was
-- fetched by an attempt that is still recording it: wait while that attempt is alive. Once it has
-- acked, this job passes and (flagged Verify) finds the URL recorded in PostgreSQL.
local urlKey = urlMark(host, ARGV[9])
local other = urlKey and redis.call('HGET', base .. 'fetched', urlKey)
if other and other ~= id then
  local otherMark = redis.call('HGET', base .. 'fetched', other)
  -- The other lease waits in the process stage's backlog, for as long as that takes: ask again
  -- now and then, not at its (never-ending) alive time.
  if otherMark and string.sub(otherMark, 1, 7) == 'handed:' then return { 3, now + 10 * busyRetryMs } end
  local alive = otherMark and tonumber(string.match(otherMark, ' (%d+)$') or '0') or 0
  if alive > now then return { 3, alive + busyRetryMs } end
  redis.call('HDEL', base .. 'fetched', urlKey)
end

local state = redis.call('HMGET', hostKey, 'claim', 'due', 'tok', 'tokUntil')
local claim, due, tok, tokUntil = state[1], tonumber(state[2] or '0'), state[3], tonumber(state[4] or '0')

if tok and tok ~= token and tokUntil > now then
  -- A borrowed token (another host's rendered page fetching one subresource, see borrowHost) is
  -- out for that one request, not for its whole hold: ask again shortly, not when it would lapse.
  if string.sub(tok, 1, 7) == 'borrow:' then return { 3, math.max(due, now) + busyRetryMs } end
  return { 3, math.max(tokUntil, due, now + busyRetryMs) }
end
if claim and claim ~= id and redis.call('ZSCORE', KEYS[2], claim) then
  return { 3, math.max(due, now) + busyRetryMs }
end

-- This lease holds the host from here on (it may have been dispatched, or adopted, or the
-- previous holder's lease is gone).
redis.call('HSET', hostKey, 'claim', id)
redis.call('ZREM', KEYS[1], host)
if (ARGV[11] or '') ~= '' then redis.call('HSET', base .. 'holders', id, ARGV[11] .. '\n' .. token) end
if due > now then
  redis.call('ZADD', KEYS[2], due + leaseMs, id)
  return { 2, due }
end
redis.call('HSET', hostKey, 'tok', token, 'tokUntil', now + holdMs)
redis.call('ZADD', KEYS[2], now + leaseMs, id)
local health = redis.call('HMGET', hostKey, 'streak', 'backoff', 'blk', 'lvl')
local verify = urlKey and redis.call('ZSCORE', base .. 'verified', urlKey) and 1 or 0
return { 1, due, tonumber(health[1] or '0'), tonumber(health[2] or '0'), tonumber(health[3] or '0'), tonumber(health[4] or '0'), verify }
