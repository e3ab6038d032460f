--[[
  renewOwnership (v1): extends a partition's ownership lease if this member still holds it.

  KEYS[1] owner key (STRING member id, with a TTL)
  ARGV[1] member id   ARGV[2] ttl (ms)
  Returns 1 if renewed, 0 if another member holds it or it expired (the caller has lost it).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 1
end
return 0
