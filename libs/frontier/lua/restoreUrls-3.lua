--[[
  restoreUrls (v1): `trawl frontier rebuild` puts URLs back into a partition whose Redis data was
  lost, from their rows in PostgreSQL. Idempotent per rebuild: the rebuild reads `urls` in
  fingerprint order, and this partition remembers the last fingerprint it restored (KEYS[3]), so
  a rebuild that is interrupted and run again — or two running at once — never queues a URL
  twice.

  KEYS[1] ready  KEYS[2] stats  KEYS[3] restored mark: STRING "<generation> <last fingerprint hex>"
  ARGV[1] key base  ARGV[2] now (ms)  ARGV[3] rebuild generation (a mark of another generation is void)
  ARGV[4] due (ms): no restored host is fetched before this. Redis lost every host's due time
          and fetch token; a fetch in flight when it did may go on until its deadline, so the
          rebuild says "not before the rebuild began plus the fetch hold" (the politeness delay)
  ARGV[5..] quintuples, in ascending fingerprint order:
    fingerprint (lowercase hex), kind ('q': queue the URL and count it in its host's budget;
    'c': only count it: the URL was queued once and is settled now; 's': it waits in PostgreSQL
    (spilled): count it in its host's spilled URLs (field sp) and have the host refilled), host,
    band, entry
  Returns { queued, counted, skipped (already restored) }; spilled URLs are among the counted
]]
--- @include "hostReady"
local base = ARGV[1]
local now = tonumber(ARGV[2])
local generation = ARGV[3]
local notBefore = tonumber(ARGV[4])
local mark = redis.call('GET', KEYS[3])
local last = ''
if mark then
  local g, hex = string.match(mark, '^(%S+) (%x*)$')
  if g == generation then last = hex end
end
local queued, counted, skipped = 0, 0, 0
for i = 5, #ARGV, 5 do
  local fp, kind, host, band, entry = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  -- Fingerprints are equal-length lowercase hex: string order is byte order.
  if fp <= last then
    skipped = skipped + 1
  else
    last = fp
    local hostKey = base .. 'h:' .. host
    redis.call('HINCRBY', hostKey, 'total', 1)
    if tonumber(redis.call('HGET', hostKey, 'due') or '0') < notBefore then redis.call('HSET', hostKey, 'due', notBefore) end
    if kind == 'q' then
      redis.call('RPUSH', base .. 'q:' .. host .. ':' .. band, entry)
      redis.call('HINCRBY', hostKey, 'n', 1)
      redis.call('PERSIST', hostKey)
      queued = queued + 1
      hostReady(base, KEYS[1], host, now)
    elseif kind == 's' then
      redis.call('HINCRBY', hostKey, 'sp', 1)
      if tonumber(band) > tonumber(redis.call('HGET', hostKey, 'spb') or '-1') then redis.call('HSET', hostKey, 'spb', band) end
      redis.call('PERSIST', hostKey)
      redis.call('SADD', base .. 'refill', host)
      redis.call('HINCRBY', KEYS[2], 'spilled', 1)
      counted = counted + 1
    else
      counted = counted + 1
    end
  end
end
redis.call('SET', KEYS[3], generation .. ' ' .. last)
if queued > 0 then redis.call('HINCRBY', KEYS[2], 'queued', queued) end
return { queued, counted, skipped }
