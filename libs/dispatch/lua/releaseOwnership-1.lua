--[[
  releaseOwnership (v1): gives a partition's ownership up, if this member holds it (a member
  stopping, or handing the partition to the member the ring now prefers).

  KEYS[1] owner key (STRING member id, with a TTL)
  ARGV[1] member id
  Returns 1 if released, 0 if this member did not hold it.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
