-- kv_delete.lua: delete keys from one group.
--
-- KEYS[1] values  hash  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:values  key -> value
-- KEYS[2] expiry  zset  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:expiry  key -> expiry (ms)
-- ARGV[1..] keys (at most a few thousand per call)
-- Returns the number of keys that existed.

local n = redis.call('HDEL', KEYS[1], unpack(ARGV))
redis.call('ZREM', KEYS[2], unpack(ARGV))
return n
