--[[
  addIfNew (v1): a scalable Bloom filter on plain Redis bitmaps, for servers without RedisBloom.
  Adds a batch of items and says, for each, whether it was definitely new.

  Layers: layer 0 holds `capacity` items at error rate errorRate/2; when the newest layer is
  full, a layer with expansion × the capacity and half the error rate is added, so the compound
  false-positive rate stays under errorRate however far the crawl outgrows its estimate.
  Bit positions use double hashing: bit_i = (h1 + i·h2) mod m, from two 32-bit words of the
  URL fingerprint (computed by the caller).

  KEYS[1] meta   HASH layers, and per layer i: m<i> (bits), k<i> (hashes), c<i> (capacity), n<i> (items), p<i> (error rate)
  ARGV[1] key base for layer bitmaps (<base><i>)
  ARGV[2] capacity of layer 0   ARGV[3] error rate   ARGV[4] expansion
  ARGV[5] 1 = add, 0 = only test
  ARGV[6..] pairs h1, h2
  Returns one integer per item: 1 = definitely new (added, unless only testing), 0 = maybe seen.
]]
local meta = KEYS[1]
local base = ARGV[1]
local adding = ARGV[5] == '1'
local LN2SQ = math.log(2) * math.log(2)

local function addLayer(i, capacity, errorRate)
  local m = math.ceil(-capacity * math.log(errorRate) / LN2SQ)
  if m > 4294967295 then m = 4294967295 end
  local k = math.max(1, math.ceil(-math.log(errorRate) / math.log(2)))
  redis.call('HSET', meta, 'layers', i + 1, 'm' .. i, m, 'k' .. i, k, 'c' .. i, capacity, 'n' .. i, 0, 'p' .. i, errorRate)
end

local layers = tonumber(redis.call('HGET', meta, 'layers') or '0')
if layers == 0 then
  if not adding then
    local none = {}
    for _ = 6, #ARGV, 2 do none[#none + 1] = 1 end
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
-- Seals the newest layer once it holds its capacity and opens the next one, so no layer is
-- ever filled past the size its error rate was computed for.
local function sealIfFull()
  local L = layer[newest]
  if L.n < L.c then return end
  addLayer(newest + 1, L.c * tonumber(ARGV[4]), L.p / 2)
  newest = newest + 1
  layer[newest] = params(newest)
end

-- BITFIELD arguments for an item's k bits in layer L: GET them, or SET them to 1.
local function bitArgs(L, h1, h2, set)
  local args = {}
  for j = 0, L.k - 1 do
    args[#args + 1] = set and 'SET' or 'GET'
    args[#args + 1] = 'u1'
    args[#args + 1] = (h1 + j * h2) % L.m
    if set then args[#args + 1] = 1 end
  end
  return args
end

local function inLayer(i, h1, h2)
  local bits = redis.call('BITFIELD', base .. i, unpack(bitArgs(layer[i], h1, h2, false)))
  for _, b in ipairs(bits) do if b == 0 then return false end end
  return true
end

local out = {}
for a = 6, #ARGV, 2 do
  local h1, h2 = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  if adding then sealIfFull() end
  local seen = false
  for i = 0, newest - 1 do
    if inLayer(i, h1, h2) then seen = true; break end
  end
  if seen then
    out[#out + 1] = 0
  elseif not adding then
    out[#out + 1] = inLayer(newest, h1, h2) and 0 or 1
  else
    local L = layer[newest]
    local old = redis.call('BITFIELD', base .. newest, unpack(bitArgs(L, h1, h2, true)))
    local new = 0
    for _, b in ipairs(old) do if b == 0 then new = 1; break end end
    out[#out + 1] = new
    if new == 1 then
      L.n = L.n + 1
      redis.call('HINCRBY', meta, 'n' .. newest, 1)
    end
  end
end
return out
