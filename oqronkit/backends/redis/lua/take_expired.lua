-- requires: queue_lib.lua
-- take_expired.lua: remove and return up to a limit of leases expired at a time, oldest
-- first (ties by job id), so each expired lease goes to exactly one caller.
--
-- KEYS[1] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases  job id -> "<token>|<worker>"
-- KEYS[2] expiry   zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry  job id -> lease expiry (ms)
-- ARGV[1] now (epoch ms)
-- ARGV[2] limit (> 0)
-- Returns JSON [job id, token, expiry, worker, job id, token, expiry, worker, ...] (numbers
-- as text; worker "" for a lease extend.lua re-created).

local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local ids = {}
for i = 1, #expired, 2 do
  ids[#ids + 1] = expired[i]
end
if #ids == 0 then
  return '[]'
end
local held = read_chunked('HMGET', KEYS[1], ids)
local out = {}
for i, id in ipairs(ids) do
  if held[i] then
    out[#out + 1] = id
    out[#out + 1] = lease_token(held[i])
    out[#out + 1] = expired[2 * i]
    out[#out + 1] = lease_worker(held[i])
  end
end
call_chunked('HDEL', KEYS[1], ids)
call_chunked('ZREM', KEYS[2], ids)
return reply(out)
