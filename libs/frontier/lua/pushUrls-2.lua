--[[
  pushUrls (v1): appends discovered URLs to their hosts' back queues (one partition).

  KEYS[1] ready   ZSET host -> due time (ms); hosts with queued URLs that no lease holds
  KEYS[2] stats   HASH partition counters (queued, done)
  ARGV[1] key base "<prefix>:{p<n>}:"; host state is <base>h:<host>, back queues <base>q:<host>:<band>
  ARGV[2] now (ms)
  ARGV[3] per-host budget: URLs ever queued for one host; 0 = unlimited
  ARGV[4..] triples: host, band (integer, higher is served first), entry
  Returns { pushed, refusedOverBudget }
  The caller has already deduplicated through the seen-set; this script never checks membership.
]]
--- @include "hostReady"
local base = ARGV[1]
local now = tonumber(ARGV[2])
local budget = tonumber(ARGV[3])
local pushed, refused = 0, 0
for i = 4, #ARGV, 3 do
  local host, band, entry = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local hostKey = base .. 'h:' .. host
  local total = redis.call('HINCRBY', hostKey, 'total', 1)
  if budget > 0 and total > budget then
    redis.call('HINCRBY', hostKey, 'total', -1)
    refused = refused + 1
  else
    redis.call('RPUSH', base .. 'q:' .. host .. ':' .. band, entry)
    redis.call('HINCRBY', hostKey, 'n', 1)
    pushed = pushed + 1
    hostReady(base, KEYS[1], host, now)
  end
end
if pushed > 0 then redis.call('HINCRBY', KEYS[2], 'queued', pushed) end
return { pushed, refused }
