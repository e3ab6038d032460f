--[[
  releaseAddress (v1): a request of an address group has ended (response read, or failed). Frees
  the holder's slot and moves the group's next start time forward to nextAt (never backward).

  KEYS[1] slots  KEYS[2] state   (see acquireAddress)
  ARGV[1] holder  ARGV[2] now (ms)  ARGV[3] nextAt (ms, 0 = no delay asked)  ARGV[4] hold ms
  Returns 1 if the holder held a slot, else 0 (its hold had lapsed); nextAt applies either way:
  a request did happen.
]]
local now = tonumber(ARGV[2])
local holdMs = tonumber(ARGV[4])
local heldUntil = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
local nextAt = tonumber(ARGV[3])
-- The cycle this request took, from its start to the next start it allows: how far apart the
-- group's waiting jobs are best given their times.
if heldUntil and nextAt > 0 then
  redis.call('HSET', KEYS[2], 'cycle', math.max(nextAt - (tonumber(heldUntil) - holdMs), 0))
end
local current = tonumber(redis.call('HGET', KEYS[2], 'next') or '0')
if nextAt > current then redis.call('HSET', KEYS[2], 'next', nextAt) end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], math.max(nextAt - now, 0) + holdMs) end
return heldUntil and 1 or 0
