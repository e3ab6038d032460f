--[[
  adoptRestored (v1): puts a Lua bitmap filter restored from a snapshot (written beside the live
  one under a restore key base) in place of the shard's live filter, in one step, so a reader
  sees the old filter or the restored one, never a mix of their layers.

  Layer bitmaps are built from the key bases in ARGV, as in addIfNew: the number of layers is
  known only from the meta hashes. They share the shard's hash tag, hence its slot.

  KEYS[1] live meta      HASH (see addIfNew)
  KEYS[2] restored meta  HASH, the same fields
  ARGV[1] live layer key base (<base><i>)
  ARGV[2] restored layer key base
  Returns the number of layers now live; -1 when there is no restored meta (nothing changed).
]]
local live, restored = KEYS[1], KEYS[2]
local liveBase, restoredBase = ARGV[1], ARGV[2]
local count = tonumber(redis.call('HGET', restored, 'layers') or '-1')
if count < 0 then return -1 end
local old = tonumber(redis.call('HGET', live, 'layers') or '0')
for i = 0, old - 1 do redis.call('UNLINK', liveBase .. i) end
for i = 0, count - 1 do
  -- A layer with no bit set was never written, so it has no key to move.
  if redis.call('EXISTS', restoredBase .. i) == 1 then redis.call('RENAME', restoredBase .. i, liveBase .. i) end
end
redis.call('RENAME', restored, live)
return count
