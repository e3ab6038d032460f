--[[
  setAdmission (v1): records the seed admission decision a process took from the frontier's
  queued count, unless another process changed the state since this one read it (compare and
  set), so every scheduler, dashboard and CLI of a crawl shares one hysteresis.

  KEYS[1] admission  HASH state ('admitting'|'paused'), since (ms), queued, max, resume, checked (ms)
  ARGV[1] the state the decision started from   ARGV[2] the decided state
  ARGV[3] queued   ARGV[4] max queued   ARGV[5] resume below   ARGV[6] now (ms)
  Returns {state, since}: the decided state, or the one another process set first.
]]
local current = redis.call('HGET', KEYS[1], 'state') or 'admitting'
local since = tonumber(redis.call('HGET', KEYS[1], 'since') or '0')
if current ~= ARGV[1] then return {current, since} end
if ARGV[2] ~= current or since == 0 then since = tonumber(ARGV[6]) end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'since', since, 'queued', ARGV[3], 'max', ARGV[4], 'resume', ARGV[5], 'checked', ARGV[6])
return {ARGV[2], since}
