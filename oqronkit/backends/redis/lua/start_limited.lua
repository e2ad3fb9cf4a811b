-- requires: queue_lib.lua
-- start_limited.lua: the start gate of a rate-limited queue (HotPlane.start_limited),
-- right before handlers start. The starting leases' entries in the queue's rate log
-- (logged by claim_limited.lua at their claim) move to at, which is now or, if later,
-- the log's latest entry, if the window ending at at has room for all of them once the
-- entries that left it are pruned; else nothing is logged and the answer says when the
-- oldest entry that must leave does. The arithmetic is backends/claim_limits.py's admit.
--
-- KEYS[1] starts   zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:starts   lease token -> claim or start time (ms)
-- ARGV[1] now (epoch ms)
-- ARGV[2] starts per window (>= 1)
-- ARGV[3] window (ms)
-- ARGV[4..] the starting leases' tokens (integer text, 1 to ARGV[2] of them)
-- Returns {at (text), retry_at (text)}: at "-1" when refused, retry_at "-1" when logged.

local now, rate, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local at = now
local latest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if latest[2] and tonumber(latest[2]) > at then
  at = tonumber(latest[2])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', at - window)

local mine, logged = {}, 0
for i = 4, #ARGV do
  mine[ARGV[i]] = true
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    logged = logged + 1
  end
end
local over = redis.call('ZCARD', KEYS[1]) - logged + (#ARGV - 3) - rate
if over > 0 then  -- the over-th oldest entry that is not ours leaves the window first
  local seen = 0  -- ours are at most logged of the first over + logged entries
  local entries = redis.call('ZRANGE', KEYS[1], 0, over + logged - 1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    if not mine[entries[i]] then
      seen = seen + 1
      if seen == over then
        return {'-1', exact(tonumber(entries[i + 1]) + window)}
      end
    end
  end
end

local log = {}
for i = 4, #ARGV do
  log[#log + 1] = exact(at)
  log[#log + 1] = ARGV[i]
end
call_chunked('ZADD', KEYS[1], log)
redis.call('PEXPIRE', KEYS[1], window + 60000)
return {exact(at), '-1'}
