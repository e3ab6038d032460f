--[[
  ackLeases (v1): the URLs of these leases are done (recorded, outlinks pushed). Removes the
  leases; a lease that already expired (its URL was requeued) is not counted.

  KEYS[1] leases  KEYS[2] leaseData  KEYS[3] stats
  ARGV[1..] lease ids
  Returns the number of leases removed.
]]
local done = 0
for i = 1, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then done = done + 1 end
  redis.call('HDEL', KEYS[2], ARGV[i])
end
if done > 0 then redis.call('HINCRBY', KEYS[3], 'done', done) end
return done
