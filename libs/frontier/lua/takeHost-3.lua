--[[
  takeHost (v3): a render stage takes over the host a fetch stage left held for a lease's page
  (the fetch attempt handed the page to render, see docs/architecture.md, "Rendering"), or keeps
  it (called again with its own token: a renewal). The host stays this lease's throughout; what
  changes hands is its token, from the fetch attempt's (or a render attempt that stopped renewing:
  it died) to this render attempt's, held only `alive ms` past each call. Two deliveries of one
  render job never hold the host together: the second finds the first's token live.

  A lease that lives but whose claim was freed (a delivery gave the host back after rendering and
  died before handing the page on; the host had nothing else queued) takes the claim again when
  `retake` is asked, as the gate would: no other live lease holds the host and no live token is
  out. The page is then rendered again rather than handed on unrendered. Asked only where no
  address group's turn goes with the host (TRAWL_POLITENESS_KEY host): a turn given back with the
  host is not taken again here.

  KEYS[1] leases  KEYS[2] fetched (lease id -> "<token> <alive until ms>" or "handed:...")
  KEYS[3] ready
  ARGV[1] key base  ARGV[2] host  ARGV[3] lease id  ARGV[4] the fetch attempt's token
  ARGV[5] this render attempt's token  ARGV[6] now (ms)  ARGV[7] alive ms
  ARGV[8] 1 = retake a freed claim (see above)
  Returns { code, atMs }
    1 OK      this attempt holds the host's token until now + alive ms; atMs: the host's due time
              (an earlier delivery that gave the host back for this lease moved it past the job's)
    3 BUSY    another render attempt of the page holds it, alive until atMs: try again then
    4 STALE   the lease is gone (expired, requeued, acknowledged): nothing to render under
    5 HANDED  an earlier attempt handed the page to the process stage already: nothing left to do
    6 LOST    the lease lives but no longer holds the host (another live lease has it, or the
              claim was freed and `retake` was not asked)
]]
local base, host, id, from, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local now = tonumber(ARGV[6])
local aliveMs = tonumber(ARGV[7])
local hostKey = base .. 'h:' .. host

if not redis.call('ZSCORE', KEYS[1], id) then return { 4, 0 } end
local mark = redis.call('HGET', KEYS[2], id)
if mark and string.sub(mark, 1, 7) == 'handed:' then return { 5, 0 } end

local state = redis.call('HMGET', hostKey, 'claim', 'tok', 'tokUntil', 'due')
local claim, tok, tokUntil = state[1], state[2], tonumber(state[3] or '0')
if claim ~= id and (ARGV[8] ~= '1' or (claim and redis.call('ZSCORE', KEYS[1], claim))) then return { 6, 0 } end
if tok and tok ~= from and tok ~= token and tokUntil > now then return { 3, tokUntil } end
if claim ~= id then
  redis.call('HSET', hostKey, 'claim', id)
  redis.call('ZREM', KEYS[3], host)
end
redis.call('HSET', hostKey, 'tok', token, 'tokUntil', now + aliveMs)
return { 1, tonumber(state[4] or '0') }
