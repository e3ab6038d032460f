--[[
  takeRefill (v1): begins a refill of one partition: the hosts whose back queues run low while
  PostgreSQL holds more of their URLs (spilled, see pushUrls), and the partition's refill lock.
  One refill of a partition runs at a time, so each host's URLs come back in order; a refill
  whose lock has lapsed (its process died or stalled) can no longer land (refillHosts checks it).

  KEYS[1] refill  SET hosts to refill (pushUrls, claimReady and restoreUrls add them)
  KEYS[2] lock    STRING the refill under way: "<token> <until ms>"
  ARGV[1] key base "<prefix>:{p<n>}:"   ARGV[2] token (unique per refill)
  ARGV[3] lock ms: how long the refill may take before another may begin
  ARGV[4] hosts at most   ARGV[5] head: a host is topped up to this many queued URLs
  ARGV[6] now (ms)
  Returns {} when no host needs a refill or another refill holds the lock; else
  { host, wanted, host, wanted, ... } with the lock taken.
  Hosts that no longer need one (refilled meanwhile, or nothing spilled) leave the set.
]]
local base = ARGV[1]
local head = tonumber(ARGV[5])
local now = tonumber(ARGV[6])
local out = {}
local lock = redis.call('GET', KEYS[2])
if lock and tonumber(string.match(lock, ' (%d+)$') or '0') > now then return out end
for _, host in ipairs(redis.call('SRANDMEMBER', KEYS[1], tonumber(ARGV[4]))) do
  local state = redis.call('HMGET', base .. 'h:' .. host, 'n', 'sp')
  local n, sp = tonumber(state[1] or '0'), tonumber(state[2] or '0')
  if sp <= 0 or n * 2 > head then
    redis.call('SREM', KEYS[1], host)
  else
    out[#out + 1] = host
    out[#out + 1] = math.min(sp, math.max(1, head - n))
  end
end
if #out > 0 then redis.call('SET', KEYS[2], ARGV[2] .. ' ' .. (now + tonumber(ARGV[3]))) end
return out
