--[[
  claimReady (v3): the dispatcher's step. First returns the URLs of expired leases (dead
  workers) to the front of their queues, then leases the next URL of each host that is due,
  highest band first, up to a limit. A leased host leaves the ready heap until it is released,
  so no second URL of it is dispatched while one is out.
  Host rank (ARGV[10..13]; src/rank.ts is the same arithmetic): when more hosts are due than the
  limit, the hosts claimed are the best-ranked of the earliest-due ARGV[11], ranked by
  due time less score × lead (a host not yet due ranks at its due time, behind every due one).
  The score is the weighted mean of the host's authority (distinct linking hosts, the HyperLogLog
  <base>in:<host>, log-scaled to 1 at ARGV[14] hosts) and its seeds' priority (field `seed` of
  <base>h:<host>). The window keeps the call O(limit · log n); the earliest-due host is always in
  it, so none starves.

  KEYS[1] ready       ZSET host -> due ms
  KEYS[2] leases      ZSET lease id -> expiry ms
  KEYS[3] leaseData   HASH lease id -> "host\nband\nentry"
  KEYS[4] tombstones  ZSET lease id -> when it expired (kept one day)
  KEYS[5] stats       HASH queued, done
  KEYS[6] seq         STRING lease id counter
  ARGV[1] key base    ARGV[2] now (ms)    ARGV[3] max hosts to claim (0: only expire)
  ARGV[4] lease ms    ARGV[5] bands       ARGV[6] lease id prefix ("p0")
  ARGV[7] max leases to expire in this call
  ARGV[8] lead (ms): hosts due within this much of now are claimed already, so the job is at
          its worker when the host comes due (the gate still holds it until then)
  ARGV[9] 1 = claim only while the partition is marked live (<base>live; see below)
  ARGV[10] rank lead (ms): how far ahead a host of score 1 goes; 0 = due order alone
  ARGV[11] rank window: how many of the earliest-due hosts are looked at (at least ARGV[3])
  ARGV[12] weight of authority  ARGV[13] weight of seed priority
  ARGV[14] authority saturation: distinct linking hosts that give authority 1
  ARGV[15] head (0 = nothing spills): a host with spilled URLs (field sp) left with half of this
          or fewer queued joins the SET <base>refill, so a refill tops it up before it runs dry
  Returns { nextDueMs (-1 if no host waits), expiredCount, id, host, band, entry, dueMs, id, host, ... }
  (dueMs: when the host may be fetched, so a job handed out ahead of time can wait for it)
  nextDueMs is -2 (PAUSED) when an operator paused the whole crawl: nothing is claimed.
  Paused hosts (operator pause, the SET <base>paused; its member '*' pauses every host) are
  never claimed: a paused host met in the ready heap leaves it (resumeHosts puts it back).
]]
--- @include "requeueLease"
--- @include "hostRank"
local base = ARGV[1]
local now = tonumber(ARGV[2])
local max = tonumber(ARGV[3])
local leaseMs = tonumber(ARGV[4])
local bands = tonumber(ARGV[5])
local keys = { ready = KEYS[1], leases = KEYS[2], leaseData = KEYS[3], tombstones = KEYS[4], stats = KEYS[5] }
local head = tonumber(ARGV[15] or '0')
-- A host running low while PostgreSQL holds more of its URLs asks for a refill.
local function runningLow(hostKey, host, left)
  if head > 0 and left * 2 <= head and tonumber(redis.call('HGET', hostKey, 'sp') or '0') > 0 then
    redis.call('SADD', base .. 'refill', host)
  end
end

local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[7]))
for _, id in ipairs(expired) do requeueLease(base, keys, id, now) end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 86400000)

local out = { -1, #expired }
-- A partition whose Redis data was lost (FLUSHALL, a restart without persistence) lost its hosts'
-- due times and fetch tokens with it: nothing is claimed from it — atomically, whatever a
-- dispatcher believed a moment ago — until `trawl frontier rebuild` has restored it and set the
-- mark again (processes set it at start on an intact crawl).
if ARGV[9] == '1' and redis.call('EXISTS', base .. 'live') == 0 then return out end
-- Operator pause: a paused crawl claims nothing; a paused host is skipped (see the header).
local pausedKey = base .. 'paused'
if redis.call('SISMEMBER', pausedKey, '*') == 1 then
  out[1] = -2
  return out
end
if max > 0 then
  -- Lease ids are `<prefix>-<seq>`. A new (or wiped and rebuilt) partition starts its counter at
  -- ten times the clock, not at 1, so ids never repeat one an earlier generation handed out: a
  -- job of that generation still running could otherwise ack or release a new lease of the
  -- same id. (Ids stay below 1e14, exact in Lua's numbers, until the year 2286.)
  if redis.call('EXISTS', KEYS[6]) == 0 then redis.call('SET', KEYS[6], now * 10) end
  local rankLead = tonumber(ARGV[10] or '0')
  local window = max
  if rankLead > 0 then window = math.max(max, tonumber(ARGV[11] or '0')) end
  local hosts = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + tonumber(ARGV[8] or '0'), 'WITHSCORES', 'LIMIT', 0, window)
  if rankLead > 0 and #hosts > 2 then hosts = bestRanked(base, hosts, max, now, rankLead, tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14])) end
  local claimed = 0
  for h = 1, #hosts, 2 do
    local host, dueAt = hosts[h], hosts[h + 1]
    redis.call('ZREM', KEYS[1], host)
    local hostKey = base .. 'h:' .. host
    local entry, band = false, 0
    -- Operator pause: the host stays out of the ready heap, its URLs stay queued.
    local paused = redis.call('SISMEMBER', pausedKey, host) == 1
    for b = bands - 1, 0, -1 do
      if paused then break end
      entry = redis.call('LPOP', base .. 'q:' .. host .. ':' .. b)
      if entry then band = b; break end
    end
    if entry then
      runningLow(hostKey, host, redis.call('HINCRBY', hostKey, 'n', -1))
      local id = ARGV[6] .. '-' .. redis.call('INCR', KEYS[6])
      redis.call('HSET', hostKey, 'claim', id)
      redis.call('ZADD', KEYS[2], now + leaseMs, id)
      redis.call('HSET', KEYS[3], id, host .. '\n' .. band .. '\n' .. entry)
      claimed = claimed + 1
      out[#out + 1] = id
      out[#out + 1] = host
      out[#out + 1] = band
      out[#out + 1] = entry
      out[#out + 1] = dueAt
    elseif not paused then
      -- A ready host with nothing queued: repair the count rather than fail.
      redis.call('HSET', hostKey, 'n', 0)
      runningLow(hostKey, host, 0)
    end
  end
  if claimed > 0 then redis.call('HINCRBY', KEYS[5], 'queued', -claimed) end
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] then out[1] = tonumber(head[2]) end
return out
