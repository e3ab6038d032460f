--[[
  publishPolicy (v1): stores a new version of the crawl policy only if the stored one is still
  the version the caller read (compare-and-set), so two schedulers widening the scope at once
  never lose each other's seeds.

  KEYS[1] policy key (STRING: the policy as JSON, with a numeric "version")
  ARGV[1] the version the caller read (0: none stored)
  ARGV[2] the new policy as JSON (its version is ARGV[1] + 1)
  Returns 1 if stored, 0 if another process published in between (read again and retry).
]]
local current = redis.call('GET', KEYS[1])
local version = 0
if current then version = tonumber(cjson.decode(current).version) or 0 end
if version ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
