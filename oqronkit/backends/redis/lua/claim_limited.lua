-- requires: queue_lib.lua
-- claim_limited.lua: claim.lua cut to the queue's cluster-wide limits, in the same
-- script: at most <concurrency> minus the live leases (expiry after now), at most <rate>
-- minus the entries logged after at - window; each lease taken is logged at at, which is
-- now or, if later, the log's latest entry (so the log stays in time order whatever the
-- claimers' clocks; backends/claim_limits.py says why that makes the limit exact).
-- start_limited.lua moves a lease's entry to its start. A claim cut short while ready
-- jobs remain counts one held-back claim in now's minute.
--
-- KEYS[1] ready    zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] meta     hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- KEYS[4] leases   hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- KEYS[5] expiry   zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry   job id -> lease expiry (ms)
-- KEYS[6] seq      string  oqron:<p>:<e>:{<p>:<e>:<queue>}:seq      enqueue sequence
-- KEYS[7] token    string  oqron:<p>:<e>:{<p>:<e>:<queue>}:token    last fencing token handed out
-- KEYS[8] starts   zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:starts   lease token -> claim or start time (ms)
-- KEYS[9] held     hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:held     minute start (ms) -> held-back claims
-- ARGV[1] now (epoch ms)
-- ARGV[2] limit (>= 0)
-- ARGV[3] lease expiry (epoch ms)
-- ARGV[4] worker id
-- ARGV[5] most due jobs promoted by one call
-- ARGV[6] global concurrency (0: none)
-- ARGV[7] claims per window (0: no rate limit)
-- ARGV[8] window (ms)
-- ARGV[9] minute length (ms) and ARGV[10] how long held counts are kept (ms)
-- Returns JSON [held (0/1), retry_at (ms, -1: none), first token (text), job id, ...].

local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local concurrency, rate, window = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
promote_due(KEYS[1], KEYS[2], KEYS[3], KEYS[6], ARGV[1], tonumber(ARGV[5]))

local allowed, retry_at = limit, -1
if concurrency > 0 then
  local live = redis.call('ZCOUNT', KEYS[5], '(' .. ARGV[1], '+inf')
  allowed = math.min(allowed, math.max(concurrency - live, 0))
end
local at = now
if rate > 0 then
  local latest = redis.call('ZRANGE', KEYS[8], -1, -1, 'WITHSCORES')
  if latest[2] and tonumber(latest[2]) > at then
    at = tonumber(latest[2])
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', at - window)
  allowed = math.min(allowed, math.max(rate - redis.call('ZCARD', KEYS[8]), 0))
end

local first, ids = nil, {}
if allowed > 0 then
  first, ids = lease_ready(KEYS[1], KEYS[4], KEYS[5], KEYS[7], allowed, ARGV[3], ARGV[4])
end
if rate > 0 and first then
  local log = {}
  for i = 1, #ids do
    log[#log + 1] = exact(at)
    log[#log + 1] = exact(first + i - 1)
  end
  call_chunked('ZADD', KEYS[8], log)
  redis.call('PEXPIRE', KEYS[8], window + 60000)
end
if rate > 0 then
  local used = redis.call('ZCARD', KEYS[8])
  if used >= rate then  -- full: the (used - rate)-th oldest start frees the next claim
    local oldest = redis.call('ZRANGE', KEYS[8], used - rate, used - rate, 'WITHSCORES')
    retry_at = tonumber(oldest[2]) + window
  end
end

local held = 0
if allowed < limit and redis.call('ZCARD', KEYS[1]) > 0 then
  held = 1
  local minute, keep = tonumber(ARGV[9]), tonumber(ARGV[10])
  local bucket = now - now % minute
  if redis.call('HINCRBY', KEYS[9], exact(bucket), 1) == 1 then  -- a new minute: drop old ones
    for _, field in ipairs(redis.call('HKEYS', KEYS[9])) do
      if tonumber(field) <= now - keep - minute then
        redis.call('HDEL', KEYS[9], field)
      end
    end
    redis.call('PEXPIRE', KEYS[9], keep + minute)
  end
else
  retry_at = -1
end

local out = {held, exact(retry_at), first and exact(first) or ''}
for i = 1, #ids do
  out[#out + 1] = ids[i]
end
return cjson.encode(out)
