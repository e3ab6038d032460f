--[[
  forgetHeld (v1): the jobs a dead worker process had taken from the ready list are dropped,
  once their leases have been freed (Frontier.releaseHolder): their URLs are back in the
  frontier, so the jobs must not run. Every held list registered under the member goes.

  KEYS[1] registry of held lists  KEYS[2] jobs hash  KEYS[3] held lists' key prefix
  ARGV[1] the member's id
  Returns the number of jobs dropped.
]]
local prefix = ARGV[1] .. '|'
local dropped = 0
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if string.sub(name, 1, #prefix) == prefix then
    local list = KEYS[3] .. name
    for _, id in ipairs(redis.call('LRANGE', list, 0, -1)) do
      dropped = dropped + redis.call('HDEL', KEYS[2], id)
    end
    redis.call('DEL', list)
    redis.call('SREM', KEYS[1], name)
  end
end
return dropped
