-- requires: queue_lib.lua
-- take_expired.lua: remove and return up to a limit of leases expired at a time, oldest
-- first (ties by job id), so each expired lease goes to exactly one caller.
--
-- KEYS[1] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases  job id -> "<token>|<worker>"
-- KEYS[2] expiry   zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry  job id -> lease expiry (ms)
-- ARGV[1] now (epoch ms)
-- ARGV[2] limit (> 0)
-- Returns {job id, token, expiry, job id, token, expiry, ...}.

local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i = 1, #expired, 2 do
  local id = expired[i]
  local held = redis.call('HGET', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  if held then
    redis.call('HDEL', KEYS[1], id)
    out[#out + 1] = id
    out[#out + 1] = tonumber(lease_token(held))
    out[#out + 1] = tonumber(expired[i + 1])
  end
end
return out
