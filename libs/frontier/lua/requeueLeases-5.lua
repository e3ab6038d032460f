--[[
  requeueLeases (v1): returns these leases' URLs to the front of their queues at once, as if they
  had expired. For leases that have no fetch job: a dispatcher that died between claiming them and
  adding their jobs leaves leases nobody will ever run, and the scheduler that takes the
  partition over gives them back now instead of waiting out the lease. A lease that is not live
  (acknowledged, expired) is left alone, and so is one whose URL was fetched (its `fetched` mark):
  a job ran it, and its page is being recorded, rendered by a render stage or waits in the
  process stream; the fetch job may be finished and gone from the queue's history, but the page
  must not be fetched again. Each lease requeued leaves a tombstone, so a job for it that does
  turn up (the old dispatcher was only slow) is dropped as stale at the gate.

  KEYS[1] ready  KEYS[2] leases  KEYS[3] leaseData  KEYS[4] tombstones  KEYS[5] stats
  ARGV[1] key base  ARGV[2] now (ms)  ARGV[3..] lease ids
  Returns the number of leases requeued.
]]
--- @include "requeueLease"
local base = ARGV[1]
local now = tonumber(ARGV[2])
local keys = { ready = KEYS[1], leases = KEYS[2], leaseData = KEYS[3], tombstones = KEYS[4], stats = KEYS[5] }
local requeued = 0
for i = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[2], ARGV[i]) and redis.call('HEXISTS', base .. 'fetched', ARGV[i]) == 0 then
    requeued = requeued + requeueLease(base, keys, ARGV[i], now)
  end
end
return requeued
