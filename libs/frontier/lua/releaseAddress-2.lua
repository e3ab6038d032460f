--[[
  releaseAddress (v1): a request of an address group has ended (response read, or failed). Frees
  the holder's slot and moves the group's next start time forward to nextAt (never backward).

  KEYS[1] slots  KEYS[2] next   (see acquireAddress)
  ARGV[1] holder  ARGV[2] now (ms)  ARGV[3] nextAt (ms, 0 = no delay asked)  ARGV[4] hold ms
  Returns 1 if the holder held a slot, else 0 (its hold had lapsed); nextAt applies either way:
  a request did happen.
]]
local now = tonumber(ARGV[2])
local held = redis.call('ZREM', KEYS[1], ARGV[1])
local nextAt = tonumber(ARGV[3])
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if nextAt > current then
  redis.call('SET', KEYS[2], nextAt, 'PX', math.max(nextAt - now, 0) + tonumber(ARGV[4]))
end
return held
