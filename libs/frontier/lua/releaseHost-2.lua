--[[
  releaseHost (v3): a fetch from the host has ended (response read, or failed). Moves the host's
  due time forward to nextDue (never backward), frees it for the next URL, and optionally keeps
  the lease alive until leaseUntil (a retry waits in the queue that long).

  An attempt whose token lapsed while it still fetched (a stalled event loop, a slow response
  past the fetch hold) may release after another attempt of the same lease passed the gate: the
  host is then that attempt's, and stays held for the lease until it releases (or its token
  lapses in turn). A lapsed token, or a borrowed one, does not hold the host for the lease.

  KEYS[1] ready  KEYS[2] leases
  ARGV[1] key base  ARGV[2] host  ARGV[3] lease id  ARGV[4] attempt token  ARGV[5] now (ms)
  ARGV[6] nextDue (ms)  ARGV[7] leaseUntil (ms, 0 = leave the lease as it is)
  ARGV[8] streak, ARGV[9] back-off ms: the host's new health ('' = unchanged)
  ARGV[10] 1 = keep holding the host for this lease (its job waits for the due time, e.g. after
           fetching robots.txt); 0 = free it for the next URL
  ARGV[11] idle TTL (ms, 0 = never): a host left idle — nothing queued, no lease holding it — has
           its hash and its query-variant counts expire after this long, so the hosts of a broad
           crawl do not stay in Redis forever. It must exceed any wait a lease of the host can
           still be in (back-off, Retry-After, a retry's delay): those leave the host idle too.
           pushUrls and lease expiry PERSIST the hash again when URLs are queued. A host with
           URLs spilled to PostgreSQL (field sp) is not idle: it waits for a refill.
  ARGV[12] alive-until (ms) when this attempt fetched the lease's URL and goes on to record it,
           else '': while it keeps renewing that time (renewLease) and until the lease is
           acknowledged, no other attempt of the lease passes the gate (acquireHost), and no
           other lease of the same URL either (the URL mark, see includes/urlMark)
  ARGV[13] refusals in a row, ARGV[14] proxy tier level: the host's block state ('' = unchanged;
           the level never goes down)
  Returns 1 if this lease held the host, else 0 (the due time is moved forward either way:
  a fetch did happen); 0 too when another attempt of the lease holds it now.
]]
--- @include "hostReady"
--- @include "urlMark"
local base, host, id, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now = tonumber(ARGV[5])
local nextDue = tonumber(ARGV[6])
local leaseUntil = tonumber(ARGV[7])
local keepClaim = ARGV[10] == '1'
local hostKey = base .. 'h:' .. host

local state = redis.call('HMGET', hostKey, 'claim', 'due', 'tok', 'tokUntil')
if state[3] == token then redis.call('HDEL', hostKey, 'tok', 'tokUntil') end
local due = math.max(tonumber(state[2] or '0'), nextDue)
redis.call('HSET', hostKey, 'due', due)
-- The delay this release asked for, kept for a fetch whose worker dies mid-request: the host is
-- then due no sooner than this long after its holds are freed (releaseHolder).
if nextDue > now then redis.call('HSET', hostKey, 'gap', nextDue - now) end
if ARGV[8] ~= '' then redis.call('HSET', hostKey, 'streak', ARGV[8], 'backoff', ARGV[9]) end
if (ARGV[13] or '') ~= '' then
  local level = math.max(tonumber(redis.call('HGET', hostKey, 'lvl') or '0'), tonumber(ARGV[14]))
  redis.call('HSET', hostKey, 'blk', ARGV[13], 'lvl', level)
end
-- GT: a release never shortens a lease (the gate or a renewal may already keep it longer).
if leaseUntil > 0 then redis.call('ZADD', KEYS[2], 'XX', 'GT', leaseUntil, id) end
if (ARGV[12] or '') ~= '' and redis.call('ZSCORE', KEYS[2], id) then
  redis.call('HSET', base .. 'fetched', id, token .. ' ' .. ARGV[12])
  local mark = leaseUrlMark(redis.call('HGET', base .. 'leasedata', id))
  if mark then redis.call('HSET', base .. 'fetched', mark, id) end
end
if state[1] == id and keepClaim then return 1 end
-- The claim is this lease's, but a live token that is not this attempt's (nor a borrow's: see
-- borrowHost) belongs to another attempt of this lease, fetching or rendering now: the host is
-- freed by that attempt's release, not by this late one.
local tok = state[3]
local otherAttempt = tok and tok ~= token and string.sub(tok, 1, 7) ~= 'borrow:' and tonumber(state[4] or '0') > now
local held = 0
if state[1] == id and not otherAttempt then
  redis.call('HDEL', hostKey, 'claim')
  hostReady(base, KEYS[1], host, now)
  held = 1
end
local idleTtl = tonumber(ARGV[11] or '0')
local idle = redis.call('HMGET', hostKey, 'claim', 'n', 'sp')
if idleTtl > 0 and not idle[1] and tonumber(idle[2] or '0') <= 0 and tonumber(idle[3] or '0') <= 0 then
  redis.call('PEXPIRE', hostKey, idleTtl)
  redis.call('PEXPIRE', base .. 'v:' .. host, idleTtl)
end
return held
