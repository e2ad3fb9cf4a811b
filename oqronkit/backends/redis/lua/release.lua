-- requires: queue_lib.lua
-- release.lua: give a held lease back as ready (now) or delayed (later), if its token
-- still matches.
--
-- KEYS[1] ready    zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] meta     hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- KEYS[4] leases   hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- KEYS[5] expiry   zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry   job id -> lease expiry (ms)
-- KEYS[6] seq      string  oqron:<p>:<e>:{<p>:<e>:<queue>}:seq      enqueue sequence
-- ARGV[1] job id           ARGV[2] token (integer text)      ARGV[3] now (epoch ms)
-- ARGV[4] priority         ARGV[5] run_at (ms, or '' for now) ARGV[6] '1' for LIFO
-- ARGV[7] wake-up channel oqron:<p>:<e>:{<p>:<e>:<queue>}:wake (PUBLISHed, not a key)
-- ARGV[8] 'PUBLISH', or 'SPUBLISH' on a Redis Cluster (the channel is in the keys' slot)
-- Returns 1 when released, 0 when the token no longer holds the lease.

local id = ARGV[1]
local held = redis.call('HGET', KEYS[4], id)
if not held or lease_token(held) ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[4], id)
redis.call('ZREM', KEYS[5], id)
local priority, lifo = tonumber(ARGV[4]), ARGV[6] == '1'
local before = earliest(KEYS[2])
if ARGV[5] ~= '' and tonumber(ARGV[5]) > tonumber(ARGV[3]) then
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], ARGV[5], id)
  redis.call('HSET', KEYS[3], id, pack_meta(priority, lifo))
  -- A retry due sooner than a waiter planned for is worth waking it to re-plan.
  if not before or tonumber(ARGV[5]) < before then
    redis.call(ARGV[8], ARGV[7], 0)
  end
else
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  make_ready(KEYS[1], KEYS[6], {id}, {priority}, {lifo})
  redis.call(ARGV[8], ARGV[7], 1)
end
return 1
