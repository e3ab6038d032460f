--[[
  returnJobs (v1): a consumer stopping gives back the jobs it took and never started: every id
  on its held list but those still running (ARGV) goes back to the head of the ready list, in
  its order, for another consumer. With none left running the held list is deleted.

  KEYS[1] ready list  KEYS[2] the consumer's held list  KEYS[3] registry of held lists
  ARGV[1] the held list's name in the registry  ARGV[2..] ids of jobs still running
  Returns the number of jobs given back.
]]
local running = {}
for i = 2, #ARGV do running[ARGV[i]] = true end
local held = redis.call('LRANGE', KEYS[2], 0, -1)
local back = {}
for _, id in ipairs(held) do
  if not running[id] then table.insert(back, id) end
end
for i = #back, 1, -1 do
  redis.call('LREM', KEYS[2], 1, back[i])
  redis.call('LPUSH', KEYS[1], back[i])
end
if redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('SREM', KEYS[3], ARGV[1])
end
return #back
