--[[
  returnHost (v1): a borrowed request (see borrowHost) has ended: the borrow's token is dropped
  and the host's due time moves forward to nextDue (never backward), as after a page's fetch.
  The host's claim, queue and health are left as they are.

  KEYS[1] ready
  ARGV[1] key base  ARGV[2] host  ARGV[3] borrow token  ARGV[4] now (ms)  ARGV[5] nextDue (ms)
  ARGV[6] idle TTL (ms, 0 = never; see releaseHost)
  Returns 1 if the token was still this borrow's, else 0 (it had lapsed and another took the
  host; the due time is moved forward either way: a request did happen).
]]
local base, host, token = ARGV[1], ARGV[2], ARGV[3]
local now = tonumber(ARGV[4])
local nextDue = tonumber(ARGV[5])
local idleTtl = tonumber(ARGV[6] or '0')
local hostKey = base .. 'h:' .. host

local state = redis.call('HMGET', hostKey, 'tok', 'due', 'claim', 'n', 'sp', 'total')
local held = 0
if state[1] == token then
  redis.call('HDEL', hostKey, 'tok', 'tokUntil')
  held = 1
end
local due = math.max(tonumber(state[2] or '0'), nextDue)
redis.call('HSET', hostKey, 'due', due)
if nextDue > now then redis.call('HSET', hostKey, 'gap', nextDue - now) end
-- A host waiting in the ready heap is not claimed before its new due time (a later score only).
redis.call('ZADD', KEYS[1], 'XX', 'GT', due, host)
-- Idle (no lease holds it, nothing queued or spilled): expire as releaseHost does. A host the
-- crawl never queued is kept past its due time only, whatever the idle TTL.
if not state[3] and tonumber(state[4] or '0') <= 0 and tonumber(state[5] or '0') <= 0 then
  local ttl = idleTtl
  if not state[6] then ttl = math.max(due - now, 0) + 60000 end
  if ttl > 0 then
    redis.call('PEXPIRE', hostKey, ttl)
  end
end
return held
