--- @include "hostReady"
-- Returns a lease's URL to the front of its host's back queue and frees the host if the lease
-- held it. Leaves a tombstone so a job still carrying this lease id is recognised as stale.
local function requeueLease(base, keys, id, now)
  local data = redis.call('HGET', keys.leaseData, id)
  redis.call('ZREM', keys.leases, id)
  redis.call('HDEL', keys.leaseData, id)
  redis.call('ZADD', keys.tombstones, now, id)
  if not data then return 0 end
  local host, band, entry = string.match(data, '^([^\n]*)\n([^\n]*)\n(.*)$')
  local hostKey = base .. 'h:' .. host
  redis.call('LPUSH', base .. 'q:' .. host .. ':' .. band, entry)
  redis.call('HINCRBY', hostKey, 'n', 1)
  redis.call('HINCRBY', keys.stats, 'queued', 1)
  if redis.call('HGET', hostKey, 'claim') == id then redis.call('HDEL', hostKey, 'claim') end
  hostReady(base, keys.ready, host, now)
  return 1
end
