--[[
  renewLease (v1): a job still working keeps its lease (and, once it has fetched its URL, says it
  is alive: see releaseHost's `fetched` mark). Never shortens a lease and never revives one that
  expired or was acknowledged: its URL is back in the frontier (or done).

  KEYS[1] leases  KEYS[2] fetched (lease id -> "<token> <alive until ms>")
  ARGV[1] lease id  ARGV[2] until (ms)  ARGV[3] attempt token ('' = no mark to refresh)
  ARGV[4] alive until (ms)
  Returns 1 if the lease is live, else 0.
]]
redis.call('ZADD', KEYS[1], 'XX', 'GT', ARGV[2], ARGV[1])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
if ARGV[3] ~= '' then
  local mark = redis.call('HGET', KEYS[2], ARGV[1])
  if mark and string.sub(mark, 1, #ARGV[3] + 1) == ARGV[3] .. ' ' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3] .. ' ' .. ARGV[4]) end
end
return 1
