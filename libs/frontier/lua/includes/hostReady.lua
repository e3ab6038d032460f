-- Puts a host into the ready heap unless a lease holds it or it has nothing queued.
-- Score: its due time, but never earlier than now, so hosts that became ready at the same
-- moment are served in the order they became ready.
local function hostReady(base, readyKey, host, now)
  local hostKey = base .. 'h:' .. host
  if redis.call('HEXISTS', hostKey, 'claim') == 1 then return end
  if tonumber(redis.call('HGET', hostKey, 'n') or '0') <= 0 then return end
  local due = tonumber(redis.call('HGET', hostKey, 'due') or '0')
  redis.call('ZADD', readyKey, 'NX', math.max(due, now), host)
end
