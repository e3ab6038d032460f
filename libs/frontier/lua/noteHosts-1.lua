--[[
  noteHosts (v1): records what a host's rank is made of (see includes/hostRank), for a batch of
  hosts of one partition: a host that links to it (its authority), or the priority one of its
  seeds was given.

  KEYS[1] ready   ZSET host -> due time (only declared, for the partition's slot: not touched)
  ARGV[1] key base "<prefix>:{p<n>}:"
  ARGV[2] idle TTL (ms; 0 = none): what is noted about a host is kept this long after the last
          note when the host has nothing queued (as releaseHost lets idle hosts' state expire)
  ARGV[3..] triples: host, kind, value
    kind 'l': value is a host that links to it; PFADD to <base>in:<host>, a HyperLogLog of the
              linking hosts (at most 12 KB per host however many link to it; a few hundred bytes
              for a host with few)
    kind 's': value is a seed's priority (0..1); field `seed` of <base>h:<host> keeps the highest
  Returns the number of notes that changed something.
]]
local base = ARGV[1]
local ttl = tonumber(ARGV[2])
local changed = 0
for i = 3, #ARGV, 3 do
  local host, kind, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if kind == 'l' then
    local key = base .. 'in:' .. host
    changed = changed + redis.call('PFADD', key, value)
    if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
  elseif kind == 's' then
    local hostKey = base .. 'h:' .. host
    local priority = tonumber(value) or 0
    if priority > (tonumber(redis.call('HGET', hostKey, 'seed') or '0') or 0) then
      redis.call('HSET', hostKey, 'seed', priority)
      changed = changed + 1
      -- A host hash made here for a host with nothing queued expires as an idle host's does (a
      -- push makes it persistent).
      if ttl > 0 and redis.call('PTTL', hostKey) == -1 and tonumber(redis.call('HGET', hostKey, 'n') or '0') <= 0 and redis.call('HEXISTS', hostKey, 'claim') == 0 then
        redis.call('PEXPIRE', hostKey, ttl)
      end
    end
  end
end
return changed
