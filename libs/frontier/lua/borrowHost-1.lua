--[[
  borrowHost (v1): one non-blocking try of a host's gate for a request another host's page makes
  while it renders (a CDN's script, an API on its own name; see docs/architecture.md,
  "Rendering"). Granted only if no token of the host is out (nothing of the fleet is fetching from
  it) and the host is due now or within `within ms`; anything else is refused at once, never
  waited for: a job holding one host never waits for a second, so two jobs that each want the
  other's host cannot deadlock. A lease's claim on the host does not refuse a borrow (its job is
  not fetching; it finds the borrowed token at the gate and comes back shortly). The
  host's queue, claim and URL budget are not touched. A host the frontier knows nothing of (out
  of the crawl's scope) gets a hash of its own, which expires once it is idle (see returnHost).

  KEYS[1] paused (the partition's paused hosts; member '*' pauses all)
  ARGV[1] key base  ARGV[2] host  ARGV[3] borrow token, unique per request and starting
           `borrow:` (acquireHost asks again soon after a borrowed token, not at its lapse)
  ARGV[4] now (ms)
  ARGV[5] hold ms: the token is out until now + hold ms at most (returnHost ends it sooner)
  ARGV[6] within ms: how far ahead the host's due time may be
  Returns { code, atMs, streak, backoffMs }
    1 GRANTED  the token is this request's; start it no sooner than atMs (the host's due time,
               at most `within ms` ahead). streak and backoffMs: the host's health, for its delay
    2 NOT_DUE  the host is due at atMs, past the bound: refused
    3 BUSY     a token of the host is out until atMs (a fetch, a render, another borrow): refused
    5 PAUSED   an operator (or the block detector) paused the host or the crawl: refused
]]
local base, host, token = ARGV[1], ARGV[2], ARGV[3]
local now = tonumber(ARGV[4])
local holdMs = tonumber(ARGV[5])
local withinMs = tonumber(ARGV[6])
local hostKey = base .. 'h:' .. host

if redis.call('SISMEMBER', KEYS[1], host) == 1 or redis.call('SISMEMBER', KEYS[1], '*') == 1 then return { 5, 0 } end

local state = redis.call('HMGET', hostKey, 'due', 'tok', 'tokUntil', 'streak', 'backoff')
local due, tok, tokUntil = tonumber(state[1] or '0'), state[2], tonumber(state[3] or '0')
if tok and tokUntil > now then return { 3, tokUntil } end
if due > now + withinMs then return { 2, due } end

local known = redis.call('EXISTS', hostKey) == 1
redis.call('HSET', hostKey, 'tok', token, 'tokUntil', now + holdMs)
-- A hash made here (a host the crawl never queued) goes away even if the borrower dies before
-- returning the host; returnHost sets its expiry again.
if not known then redis.call('PEXPIRE', hostKey, holdMs + 60000) end
return { 1, due, tonumber(state[4] or '0'), tonumber(state[5] or '0') }
