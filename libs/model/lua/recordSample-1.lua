--[[
  recordSample (v2): counts one render sample's outcome for a host. The host renders once at
  least minGainShare of sampleSize samples gained, and is plain once too few could still gain;
  until then it samples on. A host with a standing verdict counts nothing.

  KEYS[1] the host's tally (HASH, see includes/hostTally.lua)
  ARGV[1] now (ms)  ARGV[2] sampleSize  ARGV[3] reviewAfterMs  ARGV[4] claimTtlMs
  ARGV[5] how long an untouched tally is kept (ms)  ARGV[6] sampleSpacing (unused)
  ARGV[7] minGainShare  ARGV[8] gained (1|0)
  Returns { verdict, samples, pending, gains, decidedAt|'', claimedAt|'', passed, lastGained (1|0), 0 }.
]]
--- @include "hostTally"
local now = tonumber(ARGV[1])
local t = standingTally(KEYS[1], now, tonumber(ARGV[3]), tonumber(ARGV[4]))
if t.verdict ~= 'sampling' then return tallyReply(t, 0) end
local size = tonumber(ARGV[2])
t.pending = math.max(0, t.pending - 1)
t.samples = t.samples + 1
t.lastGained = ARGV[8] == '1'
if t.lastGained then t.gains = t.gains + 1 end
local needed = tonumber(ARGV[7]) * size
if t.gains >= needed then
  t.verdict = 'render'
  t.decidedAt = now
elseif t.gains + math.max(0, size - t.samples) < needed then
  t.verdict = 'plain'
  t.decidedAt = now
end
saveTally(KEYS[1], t, tonumber(ARGV[5]))
return tallyReply(t, 0)
