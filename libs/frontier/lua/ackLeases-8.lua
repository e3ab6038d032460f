--[[
  ackLeases (v5): the URLs of these leases are done (recorded, outlinks pushed). Removes the
  leases; a lease that already expired (its URL was requeued) is not counted. A lease that still
  holds its host's claim gives it up (the host goes back to the ready heap at its due time): an
  acknowledged lease has nothing left to fetch, and nothing else would free the claim. A live
  token of an attempt still fetching (see releaseHost) keeps other leases at the gate until it is
  released or lapses. The process
  stage's entries of the pages recorded (see handOff) are acknowledged and deleted in the same
  step, so a page is never recorded-but-pending nor acknowledged-but-unrecorded. A lease flagged
  Verify leaves its URL mark in <base>verified (see includes/urlMark), trimmed here to the last
  VERIFIED_KEEP_MS.

  An acknowledged lease must never be adopted again: a worker killed between this ack and
  BullMQ's completion of the job leaves the job active, BullMQ's stalled check hands it to
  another worker, and the gate would otherwise take the unknown lease id for a dead-letter
  re-run and fetch the URL a second time. So an acked lease leaves a tombstone:
    * a lease the dispatcher issued (`p<n>-<seq>`) needs no entry: its id is at or below the
      partition's lease counter (`seq`), and acquireHost treats every such id that is no longer
      live as stale. One integer per partition instead of one entry per fetched URL;
    * any other lease (adopted at the gate: a dead-letter re-run `r-<uuid>`, a job added by
      hand) gets an entry in the tombstone set, kept a day like an expired lease's.

  KEYS[1] leases  KEYS[2] leaseData  KEYS[3] stats  KEYS[4] tombstones
  KEYS[5] fetched (lease id -> the attempt that fetched its URL, and its URL mark; see releaseHost)
  KEYS[6] process stream  KEYS[7] urgent process stream  KEYS[8] ready
  ARGV[1] now (ms)   ARGV[2] n, the number of lease ids   ARGV[3 .. 2+n] lease ids
  ARGV[3+n ..] process stream entry ids to acknowledge and delete ("u:<id>": the urgent stream's)
  Returns the number of leases removed.
]]
--- @include "hostReady"
--- @include "urlMark"
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
-- <base>holders (KEYS[1] is <base>leases): an acknowledged lease is nobody's hold any more.
local base = string.sub(KEYS[1], 1, -7)
local holders = base .. 'holders'
local done = 0
local verified = 0
for i = 3, 2 + n do
  local id = ARGV[i]
  if redis.call('ZREM', KEYS[1], id) == 1 then
    done = done + 1
    if not string.match(id, '^p%d+%-%d+$') then redis.call('ZADD', KEYS[4], now, id) end
  end
  local data = redis.call('HGET', KEYS[2], id)
  clearUrlMark(KEYS[5], data, id)
  local verifiedMark = verifyLeaseMark(data)
  if verifiedMark then
    redis.call('ZADD', base .. 'verified', now, verifiedMark)
    verified = verified + 1
  end
  local host = data and string.match(data, '^([^\n]*)\n')
  if host and redis.call('HGET', base .. 'h:' .. host, 'claim') == id then
    redis.call('HDEL', base .. 'h:' .. host, 'claim')
    hostReady(base, KEYS[8], host, now)
  end
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[5], id)
  redis.call('HDEL', holders, id)
end
if #ARGV > 2 + n then
  local plain, urgent = {}, {}
  for i = 3 + n, #ARGV do
    local entry = ARGV[i]
    if string.sub(entry, 1, 2) == 'u:' then urgent[#urgent + 1] = string.sub(entry, 3) else plain[#plain + 1] = entry end
  end
  for _, stream in ipairs({ { KEYS[6], plain }, { KEYS[7], urgent } }) do
    if #stream[2] > 0 then
      redis.call('XACK', stream[1], 'process', unpack(stream[2]))
      redis.call('XDEL', stream[1], unpack(stream[2]))
    end
  end
end
if verified > 0 then redis.call('ZREMRANGEBYSCORE', base .. 'verified', '-inf', now - VERIFIED_KEEP_MS) end
if done > 0 then redis.call('HINCRBY', KEYS[3], 'done', done) end
return done
