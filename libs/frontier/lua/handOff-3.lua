--[[
  handOff (v1): the fetch stage is done with a lease's URL (its response is read and its body
  stored) and hands it to the process stage: one entry on the partition's process stream, in
  the same step as the lease leaves the fetch stage's hands. From here the stream entry, not the
  fetching attempt, keeps the URL:
    * the lease no longer expires (its expiry becomes HANDED_UNTIL): a backlog however long, or
      the fetching process dying, never sends the URL back to be fetched again;
    * the lease's `fetched` mark becomes "handed:<token> HANDED_UNTIL": a job of the same lease
      redelivered to the fetch stage is stale at the gate, and another lease of the same URL
      waits there until this one is acknowledged (see includes/urlMark);
    * the entry is acknowledged, and the lease with it, once the process stage has recorded the
      page (ackLeases with the entry's id). A process stage that dies leaves the entry pending
      in the consumer group, where another one claims it.
  Only the attempt that fetched the URL (its `fetched` mark, or no mark at all) may hand it off.

  KEYS[1] leases  KEYS[2] fetched  KEYS[3] process stream (its consumer group: `process`)
  ARGV[1] lease id  ARGV[2] attempt token  ARGV[3] the entry's payload  ARGV[4] HANDED_UNTIL (ms)
  Returns the stream entry id, or false when the lease is no longer this attempt's (it expired
  or was acknowledged, or another attempt fetched it): nothing is added.
]]
local id, token = ARGV[1], ARGV[2]
if not redis.call('ZSCORE', KEYS[1], id) then return false end
local mark = redis.call('HGET', KEYS[2], id)
if mark and string.sub(mark, 1, #token + 1) ~= token .. ' ' then return false end
if redis.call('EXISTS', KEYS[3]) == 0 then redis.call('XGROUP', 'CREATE', KEYS[3], 'process', '0', 'MKSTREAM') end
local entry = redis.call('XADD', KEYS[3], '*', 'd', ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[4], id)
redis.call('HSET', KEYS[2], id, 'handed:' .. token .. ' ' .. ARGV[4])
-- The stream entry keeps the URL from here: the fetching worker's death no longer concerns it.
redis.call('HDEL', string.sub(KEYS[1], 1, -7) .. 'holders', id)
return entry
