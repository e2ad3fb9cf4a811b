-- kv_prune.lua: drop the lapsed entries of one ephemeral group (a cache prunes its
-- group now and then; kv_set also prunes on every write).
--
-- KEYS[1] values  hash  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:values  key -> value
-- KEYS[2] expiry  zset  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:expiry  key -> expiry (ms)
-- ARGV[1] now (epoch ms, the caller's clock)
-- Returns the number of entries dropped.

local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for i = 1, #gone, 4000 do
  local slice = {unpack(gone, i, math.min(i + 3999, #gone))}
  redis.call('HDEL', KEYS[1], unpack(slice))
  redis.call('ZREM', KEYS[2], unpack(slice))
end
return #gone
