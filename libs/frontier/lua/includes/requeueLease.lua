--- @include "hostReady"
--- @include "entry"
--- @include "urlMark"
-- Returns a lease's URL to the front of its host's back queue and frees the host if the lease
-- held it. Leaves a tombstone so a job still carrying this lease id is recognised as stale.
--
-- The URL comes back flagged Verify (16, UrlFlag.Verify): its lease was not acknowledged, but its
-- worker may have fetched and recorded it all the same (killed between the record and the ack,
-- or its acknowledgement lost), so the job that takes it next asks PostgreSQL first and does not
-- fetch a URL already recorded.
local function requeueLease(base, keys, id, now)
  local data = redis.call('HGET', keys.leaseData, id)
  redis.call('ZREM', keys.leases, id)
  redis.call('HDEL', keys.leaseData, id)
  clearUrlMark(base .. 'fetched', data, id)
  redis.call('HDEL', base .. 'fetched', id)
  redis.call('HDEL', base .. 'holders', id)
  redis.call('ZADD', keys.tombstones, now, id)
  if not data then return 0 end
  local host, band, entry = string.match(data, '^([^\n]*)\n([^\n]*)\n(.*)$')
  entry = entryWithVerify(entry)
  local hostKey = base .. 'h:' .. host
  redis.call('LPUSH', base .. 'q:' .. host .. ':' .. band, entry)
  redis.call('HINCRBY', hostKey, 'n', 1)
  -- A host with queued URLs never expires (see releaseHost: idle hosts do).
  redis.call('PERSIST', hostKey)
  redis.call('HINCRBY', keys.stats, 'queued', 1)
  if redis.call('HGET', hostKey, 'claim') == id then redis.call('HDEL', hostKey, 'claim') end
  hostReady(base, keys.ready, host, now)
  return 1
end
