--[[
  pushUrls (v4): appends discovered URLs to their hosts' back queues (one partition), or, past the
  partition's share of TRAWL_FRONTIER_REDIS_MAX_URLS, leaves them to wait in PostgreSQL (spilled).

  KEYS[1] ready   ZSET host -> due time (ms); hosts with queued URLs that no lease holds
  KEYS[2] stats   HASH partition counters (queued, done)
  KEYS[3] live    STRING the partition's data is intact (see claimReady)
  KEYS[4] refill  SET hosts with spilled URLs whose back queues run low (see refillHosts)
  ARGV[1] key base "<prefix>:{p<n>}:"; host state is <base>h:<host>, back queues <base>q:<host>:<band>
  ARGV[2] now (ms)
  ARGV[3] per-host budget: URLs ever queued for one host; 0 = unlimited
  ARGV[4] call id (unique per call): a call run twice — the client resends a command whose reply
          was lost when the connection dropped (a Redis restart) — pushes once; the second run
          returns the first one's verdicts (kept a minute in <base>push:<call id>)
  ARGV[5] 1 = the caller requires the live mark: a push into a partition without it (Redis lost
          the crawl; a process still running pushes what it discovers before `trawl frontier
          rebuild` has run) flags its URLs Verify (16, UrlFlag.Verify). The rebuild may restore
          the same URL from PostgreSQL; of the two copies only the first is fetched. Such a
          push never spills: the rebuild would count a spilled URL's row again in its host's
          spilled URLs, a count no row backs once a refill has taken the row
  ARGV[6] the most URLs this partition's back queues hold (0 = unlimited: nothing spills)
  ARGV[7] head: URLs of each host kept in Redis even past the cap, so a host never waits for a
          refill; a host with spilled URLs is refilled once it has half of this or fewer left
  ARGV[8..] quintuples: host, band (integer, higher is served first), entry, variant key ('' = none),
          the cap on that key (0 = unlimited): URLs ever queued under one host and URL pattern
          (one path's queries, one calendar's dates), counted in <base>v:<host>
  Returns { pushed, refusedOverBudget, refusedOverVariants, verdicts }
    verdicts: one character per URL, in order: '.' queued, 'b' refused (the host's budget is
    spent), 'v' refused (its pattern has had its share of variants) — so the caller can
    record each refused URL as skipped with its reason instead of calling it queued — 's'
    spilled: counted in its host (field sp) and in stats `spilled`, not in Redis; the caller
    records it in PostgreSQL with its band and entry, whence a refill brings it back.
  Spilling keeps each host's order (higher band first, then discovery order) while Redis stays
  bounded. A URL spills when its host already has spilled URLs, or when the partition is at its
  cap and the host has its head in Redis — unless it outranks its host's lowest URL in Redis
  (a higher band) and every spilled one (a higher band than any, field spb), and its host holds
  fewer than twice its head in Redis: then it goes to Redis past the cap, and the order is exact.
  Past twice the head it spills, and may wait behind the lower-band URLs its host has in Redis
  (at most those). Within a band, discovery order always holds.
  The caller has already deduplicated through the seen-set; this script never checks membership.
]]
--- @include "hostReady"
--- @include "entry"
local base = ARGV[1]
local now = tonumber(ARGV[2])
local budget = tonumber(ARGV[3])
local callKey = base .. 'push:' .. ARGV[4]
local verifyAll = ARGV[5] == '1' and redis.call('EXISTS', KEYS[3]) == 0
local cap = tonumber(ARGV[6])
local head = tonumber(ARGV[7])
local done = redis.call('GET', callKey)
if done then
  local _, pushedBefore = string.gsub(done, '%.', '')
  local _, budgetBefore = string.gsub(done, 'b', '')
  local _, variantsBefore = string.gsub(done, 'v', '')
  return { pushedBefore, budgetBefore, variantsBefore, done }
end
local pushed, refused, refusedVariants, spilled = 0, 0, 0, 0
local queuedNow = cap > 0 and tonumber(redis.call('HGET', KEYS[2], 'queued') or '0') or 0
-- Whether the URL waits in PostgreSQL (see the header).
local function spills(hostKey, host, band)
  if cap <= 0 then return false end
  local state = redis.call('HMGET', hostKey, 'n', 'sp', 'spb')
  local n, sp = tonumber(state[1] or '0'), tonumber(state[2] or '0')
  if sp <= 0 and (queuedNow < cap or n < head) then return false end
  if n > 0 and n < 2 * head and (sp <= 0 or tonumber(band) > tonumber(state[3] or '-1')) then
    for b = 0, tonumber(band) - 1 do
      if redis.call('LLEN', base .. 'q:' .. host .. ':' .. b) > 0 then return false end
    end
  end
  return true
end
local verdicts = {}
for i = 8, #ARGV, 5 do
  local host, band, entry, variant = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local maxVariants = tonumber(ARGV[i + 4])
  local hostKey = base .. 'h:' .. host
  local overVariants = false
  if maxVariants > 0 and variant ~= '' then
    local variantsKey = base .. 'v:' .. host
    redis.call('PERSIST', variantsKey)
    if redis.call('HINCRBY', variantsKey, variant, 1) > maxVariants then
      redis.call('HINCRBY', variantsKey, variant, -1)
      overVariants = true
    end
  end
  local total = overVariants and 0 or redis.call('HINCRBY', hostKey, 'total', 1)
  if overVariants then
    refusedVariants = refusedVariants + 1
    verdicts[#verdicts + 1] = 'v'
  elseif budget > 0 and total > budget then
    redis.call('HINCRBY', hostKey, 'total', -1)
    if maxVariants > 0 and variant ~= '' then redis.call('HINCRBY', base .. 'v:' .. host, variant, -1) end
    refused = refused + 1
    verdicts[#verdicts + 1] = 'b'
  elseif not verifyAll and spills(hostKey, host, band) then
    local left = tonumber(redis.call('HGET', hostKey, 'n') or '0')
    redis.call('HINCRBY', hostKey, 'sp', 1)
    if tonumber(band) > tonumber(redis.call('HGET', hostKey, 'spb') or '-1') then redis.call('HSET', hostKey, 'spb', band) end
    -- A host with spilled URLs never expires either, and is refilled when its queue runs low.
    redis.call('PERSIST', hostKey)
    if left * 2 <= head then redis.call('SADD', KEYS[4], host) end
    spilled = spilled + 1
    verdicts[#verdicts + 1] = 's'
  else
    if verifyAll then entry = entryWithVerify(entry) end
    redis.call('RPUSH', base .. 'q:' .. host .. ':' .. band, entry)
    redis.call('HINCRBY', hostKey, 'n', 1)
    -- A host with queued URLs never expires (releaseHost lets idle hosts expire).
    redis.call('PERSIST', hostKey)
    pushed = pushed + 1
    queuedNow = queuedNow + 1
    verdicts[#verdicts + 1] = '.'
    hostReady(base, KEYS[1], host, now)
  end
end
if pushed > 0 then redis.call('HINCRBY', KEYS[2], 'queued', pushed) end
if spilled > 0 then redis.call('HINCRBY', KEYS[2], 'spilled', spilled) end
redis.call('SET', callKey, table.concat(verdicts), 'PX', 60000)
return { pushed, refused, refusedVariants, table.concat(verdicts) }
