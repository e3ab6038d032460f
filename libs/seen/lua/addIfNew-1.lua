--[[
  addIfNew: a scalable Bloom filter on plain Redis bitmaps, for servers without RedisBloom.
  Adds a batch of items and says, for each, whether it was definitely new.

  Layers: layer 0 holds `capacity` items at error rate errorRate/2; when the newest layer is
  full, a layer with expansion × the capacity and half the error rate is added, so the compound
  false-positive rate stays under errorRate however far the crawl outgrows its estimate.
  Bit positions use double hashing: bit_i = (h1 + i·h2) mod m, from two 32-bit words of the
  URL fingerprint (computed by the caller).

  The bits of many items go in one BITFIELD call per layer, not one call per item: a command
  called from Lua costs several times the command itself, so per-item calls made this script
  cost about 25 µs per item. BITFIELD runs its operations in order, so an item repeated in the
  batch finds its bits already set by its first copy, as it would one call later. Items are
  taken in runs no longer than the room left in the newest layer, so no layer is filled past the
  size its error rate was computed for.

  KEYS[1] meta   HASH layers, and per layer i: m<i> (bits), k<i> (hashes), c<i> (capacity), n<i> (items), p<i> (error rate)
  ARGV[1] key base for layer bitmaps (<base><i>)
  ARGV[2] capacity of layer 0   ARGV[3] error rate   ARGV[4] expansion
  ARGV[5] 1 = add, 0 = only test
  ARGV[6..] pairs h1, h2
  Returns one integer per item: 1 = definitely new (added, unless only testing), 0 = maybe seen.
  Adding no items creates layer 0 if the filter has none (see addLayer), and nothing else.
]]
local meta = KEYS[1]
local base = ARGV[1]
local adding = ARGV[5] == '1'
local LN2SQ = math.log(2) * math.log(2)
-- Items per BITFIELD call: up to 4 arguments per bit, kept well under Lua's limit on unpack.
local PER_CALL = 64

-- The new layer's bitmap is allocated at its full size here (its last bit incremented by 0, which
-- changes no bit): Redis would otherwise grow it on writes far into it, and a call of nothing to
-- add (the filter's `prepare`) would leave it to the crawl's first discovery batch.
local function addLayer(i, capacity, errorRate)
  local m = math.ceil(-capacity * math.log(errorRate) / LN2SQ)
  if m > 4294967295 then m = 4294967295 end
  local k = math.max(1, math.ceil(-math.log(errorRate) / math.log(2)))
  redis.call('HSET', meta, 'layers', i + 1, 'm' .. i, m, 'k' .. i, k, 'c' .. i, capacity, 'n' .. i, 0, 'p' .. i, errorRate)
  redis.call('BITFIELD', base .. i, 'INCRBY', 'u1', m - 1, 0)
end

local h1s, h2s = {}, {}
for a = 6, #ARGV, 2 do
  h1s[#h1s + 1] = tonumber(ARGV[a])
  h2s[#h2s + 1] = tonumber(ARGV[a + 1])
end
local items = #h1s

local layers = tonumber(redis.call('HGET', meta, 'layers') or '0')
if layers == 0 then
  if not adding then
    local none = {}
    for i = 1, items do none[i] = 1 end
    return none
  end
  addLayer(0, tonumber(ARGV[2]), tonumber(ARGV[3]) / 2)
  layers = 1
end

local function params(i)
  local v = redis.call('HMGET', meta, 'm' .. i, 'k' .. i, 'c' .. i, 'n' .. i, 'p' .. i)
  return { m = tonumber(v[1]), k = tonumber(v[2]), c = tonumber(v[3]), n = tonumber(v[4]), p = tonumber(v[5]) }
end

local layer = {}
for i = 0, layers - 1 do layer[i] = params(i) end
local newest = layers - 1

-- Seals the newest layer once it holds its capacity and opens the next one.
local function sealIfFull()
  local L = layer[newest]
  if L.n < L.c then return end
  addLayer(newest + 1, L.c * tonumber(ARGV[4]), L.p / 2)
  newest = newest + 1
  layer[newest] = params(newest)
end

-- GETs (or SETs to 1) the bits of the listed items in layer i; returns, by item, whether any of
-- its bits was 0 (for SET: before this call).
local function anyZero(i, list, set)
  local L = layer[i]
  local k, m, key = L.k, L.m, base .. i
  local op = set and 'SET' or 'GET'
  local zero = {}
  for from = 1, #list, PER_CALL do
    local to = math.min(from + PER_CALL - 1, #list)
    local args = {}
    local a = 0
    for n = from, to do
      local h1, h2 = h1s[list[n]], h2s[list[n]]
      for j = 0, k - 1 do
        args[a + 1] = op
        args[a + 2] = 'u1'
        args[a + 3] = (h1 + j * h2) % m
        a = a + 3
        if set then
          args[a + 1] = '1'
          a = a + 1
        end
      end
    end
    local bits = redis.call('BITFIELD', key, unpack(args))
    for n = from, to do
      local at = (n - from) * k
      local z = false
      for j = 1, k do
        if bits[at + j] == 0 then
          z = true
          break
        end
      end
      zero[list[n]] = z
    end
  end
  return zero
end

-- Answers 0 for the listed items found in layers first..last; returns the rest.
local function dropSeen(list, first, last, out)
  for i = first, last do
    if #list == 0 then break end
    local zero = anyZero(i, list, false)
    local rest = {}
    for _, item in ipairs(list) do
      if zero[item] then rest[#rest + 1] = item else out[item] = 0 end
    end
    list = rest
  end
  return list
end

local out = {}
if not adding then
  local all = {}
  for item = 1, items do all[item] = item end
  for _, item in ipairs(dropSeen(all, 0, newest, out)) do out[item] = 1 end
  return out
end

local nextItem = 1
while nextItem <= items do
  sealIfFull()
  local L = layer[newest]
  local last = math.min(items, nextItem + (L.c - L.n) - 1)
  local run = {}
  for item = nextItem, last do run[#run + 1] = item end
  run = dropSeen(run, 0, newest - 1, out)
  if #run > 0 then
    local zero = anyZero(newest, run, true)
    local added = 0
    for _, item in ipairs(run) do
      if zero[item] then
        out[item] = 1
        added = added + 1
      else
        out[item] = 0
      end
    end
    if added > 0 then
      L.n = L.n + added
      redis.call('HINCRBY', meta, 'n' .. newest, added)
    end
  end
  nextItem = last + 1
end
return out
