--[[
  finishJob (v1): a taken job is over (done, stale, or handed to the BullMQ queue to be
  deferred, retried or dead-lettered): it leaves the consumer's held list and the jobs hash.
  A job that ended here (done or stale) is counted among the partition's completed jobs.

  KEYS[1] the consumer's held list  KEYS[2] jobs hash
  ARGV[1] job id  ARGV[2] '1' if the job ended here, else ''
  Returns 1 if the job was still held, else 0.
]]
redis.call('HDEL', KEYS[2], ARGV[1])
if ARGV[2] == '1' then redis.call('HINCRBY', KEYS[2] .. ':count', 'completed', 1) end
return redis.call('LREM', KEYS[1], 1, ARGV[1])
