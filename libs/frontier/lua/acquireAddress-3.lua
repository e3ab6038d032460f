--[[
  acquireAddress (v2): the address gate, asked after the host gate said OK and before the request
  (robots.txt included). An address group (one server address, or one registrable domain) lets at
  most `max` requests be in flight at once, and starts them no closer than the group's next start
  time (set by each start: + min interval; by each release: the politeness delay that release
  asks). Callers refused are handed reserved start times in turn, spaced at least `step` apart
  (the caller passes about one request's turn: the delay for a strict group; the group's last
  observed cycle, start to next allowed start, when longer, up to 4 steps), so the jobs of many
  hosts waiting for one address never all come back at the same instant, come back about when
  the group can take them, and the group is asked about once a step however many wait.

  KEYS[1] slots  ZSET holder -> until when its slot is held (a dead holder's slot lapses then)
  KEYS[2] book   ZSET holder -> the start time reserved for it
  KEYS[3] state  HASH: next (the group's earliest next start, ms), cycle (the last request's start
                 to the next start its release allowed, ms; see releaseAddress)
  ARGV[1] holder (the lease id)  ARGV[2] now (ms)  ARGV[3] hold ms (how long a slot is held at most)
  ARGV[4] max in flight  ARGV[5] min interval between starts (ms)  ARGV[6] step (ms): the least
  spacing of reserved start times  ARGV[7] grace (ms): how long past its time a reservation waits
  for its holder  ARGV[8] 1 = force: count a request that is already under way (never refused)
  ARGV[9] 1 = probe: one try that never waits (another host's rendered page borrowing a turn):
          granted as any ask, refused without a start time reserved (atMs: when it might pass)
  Returns { code, atMs }
    1 OK    a slot is held until now + hold ms, or until releaseAddress
    2 WAIT  refused: atMs is the start time reserved for this holder; ask again then
]]
local holder = ARGV[1]
local now = tonumber(ARGV[2])
local holdMs = tonumber(ARGV[3])
local maxInFlight = tonumber(ARGV[4])
local interval = tonumber(ARGV[5])
local baseStep = tonumber(ARGV[6])
local grace = tonumber(ARGV[7])
local force = ARGV[8] == '1'
local probe = ARGV[9] == '1'

-- A holder that died mid-request frees its slot when its hold ends; a reservation whose holder
-- did not come back within the grace frees its turn.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - grace))

local state = redis.call('HMGET', KEYS[3], 'next', 'cycle')
local nextAt = tonumber(state[1] or '0')
local step = math.max(baseStep, interval, math.min(tonumber(state[2] or '0'), 4 * baseStep), 1)
local tail = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')[2]
tail = tail and tonumber(tail)

-- Every key of the group lives as long as its latest time plus the hold, then vanishes.
local function keep(latest)
  local ttl = math.max(latest - now, 0) + holdMs + grace
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end

local function grant()
  redis.call('ZREM', KEYS[2], holder)
  redis.call('ZADD', KEYS[1], now + holdMs, holder)
  nextAt = math.max(nextAt, now + interval)
  redis.call('HSET', KEYS[3], 'next', nextAt)
  keep(math.max(nextAt, tail or 0))
  return { 1, now }
end

-- The same holder asking again (a reply lost to a reconnect): it holds its slot already.
if redis.call('ZSCORE', KEYS[1], holder) or force then return grant() end

local busy = redis.call('ZCARD', KEYS[1]) >= maxInFlight
local mine = redis.call('ZSCORE', KEYS[2], holder)
mine = mine and tonumber(mine)
if mine and mine > now then
  -- Early: its time stands, or a later one if a release has since asked for a longer delay.
  if nextAt > mine then
    mine = nextAt
    redis.call('ZADD', KEYS[2], mine, holder)
    keep(mine)
  end
  return { 2, mine }
end
-- A holder whose reserved time has come goes first; one without a reservation queues behind
-- every reservation still waiting.
if not busy and nextAt <= now and (mine or not tail) then return grant() end

local at
if mine and not busy then
  -- Its time came but the start before it was late: right after that one, keeping its place.
  at = nextAt
else
  -- At the back of the line. One whose time came while every slot was still taken goes there
  -- too (when a slot ends is unknown): however many wait, the group is asked about once a step.
  at = math.max(now + (busy and step or 0), nextAt, tail and tail + step or 0)
end
-- A probe never takes a place in the line: it goes elsewhere rather than wait.
if probe then return { 2, at } end
redis.call('ZADD', KEYS[2], at, holder)
keep(math.max(at, nextAt))
return { 2, at }
