--[[
  handOff (v3): the fetch stage is done with a lease's URL (its response is read and its body
  stored) and hands it to the process stage: one entry on one of the partition's process
  streams, in the same step as the lease leaves the fetch stage's hands. From here the stream entry, not the
  fetching attempt, keeps the URL:
    * the lease no longer expires (its expiry becomes HANDED_UNTIL): a backlog however long, or
      the fetching process dying, never sends the URL back to be fetched again;
    * the lease's `fetched` mark becomes "handed:<token> HANDED_UNTIL": a job of the same lease
      redelivered to the fetch stage is stale at the gate, and another lease of the same URL
      waits there until this one is acknowledged (see includes/urlMark);
    * the entry is acknowledged, and the lease with it, once the process stage has recorded the
      page (ackLeases with the entry's id). A process stage that dies leaves the entry pending
      in the consumer group, where another one claims it.
  Only the attempt that fetched the URL (its `fetched` mark, or no mark at all) may hand it off,
  or one that carries on for the lease (ARGV[6] = '1'): a render stage, with the page a fetch
  attempt left it. The mark may then be the fetch attempt's or an earlier render delivery's (one
  that released the host and failed before its hand-off): any mark but a hand-off's will do, since
  the render job is the only continuation of the lease's fetch (a lease id names one claim).

  A page whose host has nothing else queued (in Redis or spilled) goes to the urgent stream,
  which the process stage reads first: the host's next fetch waits on the links in this page,
  while a host with URLs queued goes on fetching them whenever its page is processed. Its entry
  id comes back as "u:<id>", which is how the ack and the process stage tell the streams apart.

  KEYS[1] leases  KEYS[2] fetched  KEYS[3] process stream  KEYS[4] urgent process stream (both
  read in the consumer group `process`)
  ARGV[1] lease id  ARGV[2] attempt token  ARGV[3] the entry's payload  ARGV[4] HANDED_UNTIL (ms)
  ARGV[5] the page's host ('' = never urgent)  ARGV[6] '1': the caller carries on for the lease's
  fetch (a render stage), '' otherwise
  Returns the stream entry id ("u:<id>" on the urgent stream), or false when the lease is no
  longer this attempt's (it expired or was acknowledged, or another attempt fetched it): nothing
  is added.
]]
local id, token = ARGV[1], ARGV[2]
if not redis.call('ZSCORE', KEYS[1], id) then return false end
local mark = redis.call('HGET', KEYS[2], id)
if mark then
  if string.sub(mark, 1, 7) == 'handed:' then return false end
  if ARGV[6] ~= '1' and string.sub(mark, 1, #token + 1) ~= token .. ' ' then return false end
end
-- <base>h:<host> (KEYS[1] is <base>leases): the host's queued (n) and spilled (sp) URLs.
local urgent = false
if (ARGV[5] or '') ~= '' then
  local left = redis.call('HMGET', string.sub(KEYS[1], 1, -7) .. 'h:' .. ARGV[5], 'n', 'sp')
  urgent = tonumber(left[1] or '0') <= 0 and tonumber(left[2] or '0') <= 0
end
local stream = urgent and KEYS[4] or KEYS[3]
if redis.call('EXISTS', stream) == 0 then redis.call('XGROUP', 'CREATE', stream, 'process', '0', 'MKSTREAM') end
local entry = redis.call('XADD', stream, '*', 'd', ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[4], id)
redis.call('HSET', KEYS[2], id, 'handed:' .. token .. ' ' .. ARGV[4])
-- The stream entry keeps the URL from here: the fetching worker's death no longer concerns it.
redis.call('HDEL', string.sub(KEYS[1], 1, -7) .. 'holders', id)
if urgent then return 'u:' .. entry end
return entry
