--[[
  claimSample (v1): hands out one of a host's render samples if the host has no standing verdict
  and fewer than sampleSize samples counted or in flight, for every worker of the crawl at once.

  KEYS[1] the host's tally (HASH, see includes/hostTally.lua)
  ARGV[1] now (ms)  ARGV[2] sampleSize  ARGV[3] reviewAfterMs  ARGV[4] claimTtlMs
  ARGV[5] how long an untouched tally is kept (ms)
  Returns { verdict, samples, pending, gains, decidedAt|'', claimedAt|'', granted (1|0) }.
]]
--- @include "hostTally"
local now = tonumber(ARGV[1])
local t = standingTally(KEYS[1], now, tonumber(ARGV[3]), tonumber(ARGV[4]))
if t.verdict ~= 'sampling' or t.samples + t.pending >= tonumber(ARGV[2]) then return tallyReply(t, 0) end
t.pending = t.pending + 1
t.claimedAt = now
saveTally(KEYS[1], t, tonumber(ARGV[5]))
return tallyReply(t, 1)
