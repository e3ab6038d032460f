--[[
  recordSample (v1): counts one render sample's outcome for a host; once sampleSize samples are
  in, the verdict falls (render when at least minGainShare of them gained). A host with a
  standing verdict counts nothing.

  KEYS[1] the host's tally (HASH, see includes/hostTally.lua)
  ARGV[1] now (ms)  ARGV[2] sampleSize  ARGV[3] reviewAfterMs  ARGV[4] claimTtlMs
  ARGV[5] how long an untouched tally is kept (ms)  ARGV[6] gained (1|0)  ARGV[7] minGainShare
  Returns { verdict, samples, pending, gains, decidedAt|'', claimedAt|'', 0 }.
]]
--- @include "hostTally"
local now = tonumber(ARGV[1])
local t = standingTally(KEYS[1], now, tonumber(ARGV[3]), tonumber(ARGV[4]))
if t.verdict ~= 'sampling' then return tallyReply(t, 0) end
t.pending = math.max(0, t.pending - 1)
t.samples = t.samples + 1
if ARGV[6] == '1' then t.gains = t.gains + 1 end
if t.samples >= tonumber(ARGV[2]) then
  if t.gains >= tonumber(ARGV[7]) * t.samples then t.verdict = 'render' else t.verdict = 'plain' end
  t.decidedAt = now
end
saveTally(KEYS[1], t, tonumber(ARGV[5]))
return tallyReply(t, 0)
