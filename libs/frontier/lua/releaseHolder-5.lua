--[[
  releaseHolder (v1): a worker process stopped heartbeating (killed, hung, cut off): everything it
  held at the gate of this partition is freed now, not when its leases and host tokens run out.
  For each lease it holds (see acquireHost's holder, and ARGV[4..]):
    * a lease already handed to the process stage, acknowledged or requeued is left alone (the
      stream entry, not the worker, keeps a handed URL);
    * if the worker's attempt holds the host's token (it may have died mid-request), the token is
      dropped and the host is due no sooner than its last asked delay (`gap`) from now;
    * the lease is requeued as an expired one would be (requeueLease): its URL goes back to the
      front of its host's queue flagged Verify, the host is ready at its due time, and a tombstone
      makes any job still carrying the lease stale. A worker that was only paused and comes back
      finds its jobs stale at the gate, its hand-offs refused and its releases freeing nothing.

  KEYS[1] ready  KEYS[2] leases  KEYS[3] leaseData  KEYS[4] tombstones  KEYS[5] stats
  ARGV[1] key base  ARGV[2] now (ms)  ARGV[3] the worker's member id
  ARGV[4..] "<lease id> <attempt token>" of the fetch jobs the worker had taken (active in the
           queue under its lock) and not yet brought to the gate: their leases, dispatched, hold
           their hosts as much as the gate's do
  Returns the number of leases requeued.
]]
--- @include "requeueLease"
local base, member = ARGV[1], ARGV[3]
local now = tonumber(ARGV[2])
local keys = { ready = KEYS[1], leases = KEYS[2], leaseData = KEYS[3], tombstones = KEYS[4], stats = KEYS[5] }
local holdersKey = base .. 'holders'
local prefix = member .. '\n'

-- What the worker held: the holds it recorded at the gate, and the jobs it had taken but not yet
-- brought to the gate (passed in: ARGV[4..], "<lease id> <attempt token>").
local held, order = {}, {}
local recorded = redis.call('HGETALL', holdersKey)
for i = 1, #recorded, 2 do
  local id, value = recorded[i], recorded[i + 1]
  if string.sub(value, 1, #prefix) == prefix then
    redis.call('HDEL', holdersKey, id)
    if not held[id] then table.insert(order, id) end
    held[id] = string.sub(value, #prefix + 1)
  end
end
for i = 4, #ARGV do
  local id, token = string.match(ARGV[i], '^(%S+) (%S+)$')
  if id and not held[id] then
    table.insert(order, id)
    held[id] = token
  end
end

local requeued = 0
for _, id in ipairs(order) do
  local token = held[id]
  local mark = redis.call('HGET', base .. 'fetched', id)
  local handed = mark and string.sub(mark, 1, 7) == 'handed:'
  if redis.call('ZSCORE', KEYS[2], id) and not handed then
    local data = redis.call('HGET', KEYS[3], id)
    local host = data and string.match(data, '^([^\n]*)\n')
    if host then
      local hostKey = base .. 'h:' .. host
      local state = redis.call('HMGET', hostKey, 'tok', 'due', 'gap')
      if state[1] == token then
        redis.call('HDEL', hostKey, 'tok', 'tokUntil')
        local due = math.max(tonumber(state[2] or '0'), now + tonumber(state[3] or '0'))
        redis.call('HSET', hostKey, 'due', due)
      end
    end
    requeued = requeued + requeueLease(base, keys, id, now)
  end
end
return requeued
