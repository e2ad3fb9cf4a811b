-- requires: queue_lib.lua
-- leases_of.lua: the leases of one worker in a queue, expired or not (a read). What a
-- worker asks after a claim or an ack whose reply was lost: which leases it holds.
--
-- KEYS[1] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases  job id -> "<token>|<worker>"
-- KEYS[2] expiry   zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry  job id -> lease expiry (ms)
-- ARGV[1] worker id
-- Returns JSON [job id, token, expiry, job id, token, expiry, ...] (numbers as text).

local out = {}
local held = redis.call('HGETALL', KEYS[1])
for i = 1, #held, 2 do
  if lease_worker(held[i + 1]) == ARGV[1] then
    out[#out + 1] = held[i]
    out[#out + 1] = lease_token(held[i + 1])
    out[#out + 1] = redis.call('ZSCORE', KEYS[2], held[i]) or '0'
  end
end
return reply(out)
