--[[
  claimSample (v2): a page of a host asks for a render sample, for every worker of the crawl at
  once. Granted if the host has no standing verdict, fewer than sampleSize samples counted or in
  flight, none in flight, and one is due: the host's first, the one after a sample that gained,
  or sampleSpacing pages after one that did not. Otherwise the page counts as passed (a host
  without a verdict only).

  KEYS[1] the host's tally (HASH, see includes/hostTally.lua)
  ARGV[1] now (ms)  ARGV[2] sampleSize  ARGV[3] reviewAfterMs  ARGV[4] claimTtlMs
  ARGV[5] how long an untouched tally is kept (ms)  ARGV[6] sampleSpacing  ARGV[7] minGainShare
  Returns { verdict, samples, pending, gains, decidedAt|'', claimedAt|'', passed, lastGained (1|0), granted (1|0) }.
]]
--- @include "hostTally"
local now = tonumber(ARGV[1])
local t = standingTally(KEYS[1], now, tonumber(ARGV[3]), tonumber(ARGV[4]))
if t.verdict ~= 'sampling' or t.samples + t.pending >= tonumber(ARGV[2]) then return tallyReply(t, 0) end
local due = t.pending == 0 and (t.samples == 0 or t.lastGained or t.passed >= tonumber(ARGV[6]))
if not due then
  t.passed = t.passed + 1
  saveTally(KEYS[1], t, tonumber(ARGV[5]))
  return tallyReply(t, 0)
end
t.pending = t.pending + 1
t.passed = 0
t.claimedAt = now
saveTally(KEYS[1], t, tonumber(ARGV[5]))
return tallyReply(t, 1)
