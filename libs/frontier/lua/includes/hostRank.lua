-- Host rank (src/rank.ts holds the same arithmetic, pure): a host's score is the weighted mean of
-- its authority (distinct linking hosts, the HyperLogLog <base>in:<host>, log-scaled to 1 at
-- `saturation`) and the highest priority its seeds were given (field `seed` of <base>h:<host>).
local function hostScore(base, host, wAuthority, wSeed, saturation)
  local total = wAuthority + wSeed
  if total <= 0 then return 0 end
  local authority = 0
  if wAuthority > 0 then
    local links = redis.call('PFCOUNT', base .. 'in:' .. host)
    if links > 0 then authority = math.min(1, math.log(1 + links) / math.log(1 + saturation)) end
  end
  local seed = 0
  if wSeed > 0 then seed = math.min(1, math.max(0, tonumber(redis.call('HGET', base .. 'h:' .. host, 'seed') or '0') or 0)) end
  return (wAuthority * authority + wSeed * seed) / total
end

-- Of `hosts` (a ZRANGE reply: host, due, host, due, ...), the `max` that rank best, in rank
-- order, as a reply of the same shape. Rank: a due host's due time less score × lead; a host not
-- yet due, its due time (behind every due host). Ties keep due-time order.
local function bestRanked(base, hosts, max, now, lead, wAuthority, wSeed, saturation)
  local ranked = {}
  for h = 1, #hosts, 2 do
    local due = tonumber(hosts[h + 1])
    local rank = due
    if due <= now then rank = due - hostScore(base, hosts[h], wAuthority, wSeed, saturation) * lead end
    ranked[#ranked + 1] = { rank = rank, order = h, host = hosts[h], due = hosts[h + 1] }
  end
  table.sort(ranked, function(a, b)
    if a.rank ~= b.rank then return a.rank < b.rank end
    return a.order < b.order
  end)
  local out = {}
  for i = 1, math.min(max, #ranked) do
    out[#out + 1] = ranked[i].host
    out[#out + 1] = ranked[i].due
  end
  return out
end
