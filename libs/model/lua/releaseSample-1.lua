--[[
  releaseSample (v2): a render sample handed out that will not be counted (its render failed):
  its slot is free for another page of the host.

  KEYS[1] the host's tally (HASH, see includes/hostTally.lua)
  ARGV[1] now (ms)  ARGV[2] sampleSize (unused)  ARGV[3] reviewAfterMs  ARGV[4] claimTtlMs
  ARGV[5] how long an untouched tally is kept (ms)  ARGV[6], ARGV[7] unused
  Returns { verdict, samples, pending, gains, decidedAt|'', claimedAt|'', passed, lastGained (1|0), 0 }.
]]
--- @include "hostTally"
local t = standingTally(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4]))
t.pending = math.max(0, t.pending - 1)
saveTally(KEYS[1], t, tonumber(ARGV[5]))
return tallyReply(t, 0)
