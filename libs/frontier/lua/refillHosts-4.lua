--[[
  refillHosts (v1): lands a refill (see takeRefill): appends the spilled URLs the refill read from
  PostgreSQL — each host's best, in order — to their hosts' back queues, once.

  KEYS[1] ready  KEYS[2] stats  KEYS[3] refill SET  KEYS[4] lock ("<token> <until ms>", see takeRefill)
  ARGV[1] key base   ARGV[2] now (ms)   ARGV[3] the refill's token
  ARGV[4] head (see pushUrls)
  ARGV[5] grace (ms): a host whose spilled count says PostgreSQL holds URLs of it, but where the
          refill found none, is given this long (a push's rows may still be on their way to
          PostgreSQL) before its count is taken as a crash's leftover and set to 0
  ARGV[6] H, the number of hosts the refill asked for; then H pairs: host, rows found
  ARGV[7 + 2H ..] triples: host, band, entry
  Returns { 1, pushed } when the refill landed now; { 0, 'applied' | 'void' } when it did not:
  its lock lapsed, or it was settled already (settleRefill). It lands at most once: the token's
  mark <base>rf:<token> ('applied', or 'void' once settled without landing) is kept a week, and
  PostgreSQL keeps the rows tagged with the token until its outcome is written there.
]]
--- @include "hostReady"
local base = ARGV[1]
local now = tonumber(ARGV[2])
local token = ARGV[3]
local head = tonumber(ARGV[4])
local grace = tonumber(ARGV[5])
local hostCount = tonumber(ARGV[6])
local mark = base .. 'rf:' .. token
local holder, lockedUntil = string.match(redis.call('GET', KEYS[4]) or '', '^(%S+) (%d+)$')
if holder ~= token or tonumber(lockedUntil) <= now or redis.call('EXISTS', mark) == 1 then
  return { 0, redis.call('GET', mark) or 'void' }
end
redis.call('SET', mark, 'applied', 'PX', 604800000)
redis.call('DEL', KEYS[4])
local pushed = 0
local first = 7 + 2 * hostCount
for i = first, #ARGV, 3 do
  local host, band, entry = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local hostKey = base .. 'h:' .. host
  redis.call('RPUSH', base .. 'q:' .. host .. ':' .. band, entry)
  redis.call('HINCRBY', hostKey, 'n', 1)
  if redis.call('HINCRBY', hostKey, 'sp', -1) < 0 then
    redis.call('HSET', hostKey, 'sp', 0)
    redis.call('HINCRBY', KEYS[2], 'spilled', 1)
  end
  redis.call('PERSIST', hostKey)
  pushed = pushed + 1
  hostReady(base, KEYS[1], host, now)
end
if pushed > 0 then
  redis.call('HINCRBY', KEYS[2], 'queued', pushed)
  redis.call('HINCRBY', KEYS[2], 'spilled', -pushed)
end
for i = 7, first - 1, 2 do
  local host, found = ARGV[i], tonumber(ARGV[i + 1])
  local hostKey = base .. 'h:' .. host
  local state = redis.call('HMGET', hostKey, 'n', 'sp', 'spz')
  local n, sp = tonumber(state[1] or '0'), tonumber(state[2] or '0')
  if sp <= 0 then
    redis.call('HDEL', hostKey, 'spz', 'spb')
  elseif found > 0 then
    redis.call('HDEL', hostKey, 'spz')
  elseif not state[3] then
    redis.call('HSET', hostKey, 'spz', now)
  elseif now - tonumber(state[3]) >= grace then
    redis.call('HINCRBY', KEYS[2], 'spilled', -sp)
    redis.call('HSET', hostKey, 'sp', 0)
    redis.call('HDEL', hostKey, 'spz', 'spb')
    sp = 0
  end
  if sp <= 0 or n * 2 > head then redis.call('SREM', KEYS[3], host) end
end
return { 1, pushed }
