--[[
  addJobs (v1): dispatched fetch jobs join a partition's ready list, each once.
  A job's payload goes into the jobs hash under its id (the lease id); its id joins the end of
  the ready list only if the hash did not hold it already, so a dispatcher adding the same
  lease twice (a retry after a timeout) makes one job.

  KEYS[1] ready list  KEYS[2] jobs hash
  ARGV    id, payload, id, payload, …
  Returns the number of jobs added.
]]
local added = 0
for i = 1, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('RPUSH', KEYS[1], ARGV[i])
    added = added + 1
  end
end
return added
