-- requires: queue_lib.lua
-- promote.lua: make one delayed job ready now, keeping its priority and LIFO flag.
--
-- KEYS[1] ready    zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] meta     hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- KEYS[4] seq      string  oqron:<p>:<e>:{<p>:<e>:<queue>}:seq      enqueue sequence
-- ARGV[1] job id
-- ARGV[2] wake-up channel oqron:<p>:<e>:{<p>:<e>:<queue>}:wake (PUBLISHed, not a key)
-- ARGV[3] 'PUBLISH', or 'SPUBLISH' on a Redis Cluster (the channel is in the keys' slot)
-- Returns 1 when promoted, 0 when the job was not delayed.

local id = ARGV[1]
if redis.call('ZREM', KEYS[2], id) == 0 then
  return 0
end
local priority, lifo = unpack_meta(redis.call('HGET', KEYS[3], id))
redis.call('HDEL', KEYS[3], id)
make_ready(KEYS[1], KEYS[4], {id}, {priority}, {lifo})
redis.call(ARGV[3], ARGV[2], 1)
return 1
