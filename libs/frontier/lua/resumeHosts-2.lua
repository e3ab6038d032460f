--[[
  resumeHosts (v1): an operator resumes paused hosts (or, with '*', the whole crawl). Each host
  leaves the partition's paused set and, if it has URLs queued and no lease holds it, goes back
  into the ready heap at its due time (a paused host was taken out of it). A host paused as
  blocked loses that mark and its run of refusals (it keeps its proxy tier level).

  KEYS[1] ready   ZSET host -> due ms
  KEYS[2] paused  SET hosts an operator paused; the member '*' pauses every host
  ARGV[1] key base   ARGV[2] now (ms)   ARGV[3..] hosts ('*': the crawl-wide pause)
  Returns the number of hosts (or '*') that were paused.
]]
--- @include "hostReady"
local base = ARGV[1]
local now = tonumber(ARGV[2])
local resumed = 0
for i = 3, #ARGV do
  local host = ARGV[i]
  resumed = resumed + redis.call('SREM', KEYS[2], host)
  if host ~= '*' then
    redis.call('HDEL', base .. 'h:' .. host, 'blocked', 'blk')
    hostReady(base, KEYS[1], host, now)
  end
end
return resumed
