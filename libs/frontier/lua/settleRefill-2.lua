--[[
  settleRefill (v1): the outcome of a refill whose rows PostgreSQL still holds tagged with its
  token (its process died, stalled or failed between reading them and writing the outcome): did
  it land (refillHosts)? If not, it never will: its mark is set 'void', so the rows can be taken
  again without being queued twice. Frees the partition's refill lock if this refill holds it.

  KEYS[1] the token's mark <base>rf:<token>   KEYS[2] lock (the partition's refill lock)
  ARGV[1] token
  Returns 'applied' or 'void'
]]
local outcome = redis.call('GET', KEYS[1])
if not outcome then
  outcome = 'void'
  redis.call('SET', KEYS[1], outcome, 'PX', 604800000)
end
local lock = redis.call('GET', KEYS[2])
if lock and string.match(lock, '^(%S+)') == ARGV[1] then redis.call('DEL', KEYS[2]) end
return outcome
