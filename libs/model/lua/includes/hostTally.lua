--[[
  A host's render-learning tally (a hash: verdict, samples, pending, gains, decidedAt,
  claimedAt, passed, lastGained), read as it stands at `now`, and written back. The rules are
  those of `standingState` in @trawl/render (learner.ts): a verdict due for review is none, and
  samples handed out more than claimTtlMs after the last claim have lapsed.
]]
local function standingTally(key, now, reviewAfterMs, claimTtlMs)
  local f = redis.call('HMGET', key, 'verdict', 'samples', 'pending', 'gains', 'decidedAt', 'claimedAt', 'passed', 'lastGained')
  local t = { verdict = f[1] or 'sampling', samples = tonumber(f[2]) or 0, pending = tonumber(f[3]) or 0,
              gains = tonumber(f[4]) or 0, decidedAt = tonumber(f[5]), claimedAt = tonumber(f[6]),
              passed = tonumber(f[7]) or 0, lastGained = f[8] == '1' }
  if t.verdict ~= 'sampling' and t.decidedAt ~= nil and now - t.decidedAt >= reviewAfterMs then
    return { verdict = 'sampling', samples = 0, pending = 0, gains = 0, passed = 0, lastGained = false }
  end
  if t.pending > 0 and t.claimedAt ~= nil and now - t.claimedAt >= claimTtlMs then t.pending = 0 end
  return t
end

local function saveTally(key, t, keepMs)
  redis.call('HSET', key, 'verdict', t.verdict, 'samples', t.samples, 'pending', t.pending, 'gains', t.gains,
    'decidedAt', t.decidedAt or '', 'claimedAt', t.claimedAt or '', 'passed', t.passed, 'lastGained', t.lastGained and '1' or '0')
  redis.call('PEXPIRE', key, keepMs)
end

local function tallyReply(t, granted)
  return { t.verdict, t.samples, t.pending, t.gains, tostring(t.decidedAt or ''), tostring(t.claimedAt or ''),
           t.passed, t.lastGained and 1 or 0, granted }
end
