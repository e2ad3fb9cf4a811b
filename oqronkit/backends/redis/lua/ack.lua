-- requires: queue_lib.lua
-- ack.lua: drop the leases whose token still matches.
--
-- KEYS[1] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases  job id -> "<token>|<worker>"
-- KEYS[2] expiry   zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry  job id -> lease expiry (ms)
-- ARGV[1..] pairs: job id, token (integer text)
-- Returns the job ids acknowledged.

local done = {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local held = redis.call('HGET', KEYS[1], id)
  if held and lease_token(held) == ARGV[i + 1] then
    redis.call('HDEL', KEYS[1], id)
    redis.call('ZREM', KEYS[2], id)
    done[#done + 1] = id
  end
end
return done
