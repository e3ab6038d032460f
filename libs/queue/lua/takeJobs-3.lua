--[[
  takeJobs (v1): a consumer takes jobs from the ready list onto its held list, with payloads.
  The consumer has already moved one id with BLMOVE (ARGV[1], '' if none); this moves up to
  ARGV[2] more in the same order and returns every taken job's id and payload. An id whose
  payload is gone (finished elsewhere) leaves the held list and is not returned.

  KEYS[1] ready list  KEYS[2] the consumer's held list  KEYS[3] jobs hash
  ARGV[1] the id already moved, or ''  ARGV[2] how many more to move at most
  Returns { id, payload, id, payload, … }.
]]
local ids = {}
if ARGV[1] ~= '' then ids[1] = ARGV[1] end
local more = tonumber(ARGV[2])
if more > 0 then
  local popped = redis.call('LPOP', KEYS[1], more)
  if popped then
    for _, id in ipairs(popped) do
      redis.call('RPUSH', KEYS[2], id)
      table.insert(ids, id)
    end
  end
end
local out = {}
for _, id in ipairs(ids) do
  local payload = redis.call('HGET', KEYS[3], id)
  if payload then
    table.insert(out, id)
    table.insert(out, payload)
  else
    redis.call('LREM', KEYS[2], 1, id)
  end
end
return out
