-- kv_set.lua: set ephemeral values of one group that vanish at an expiry, dropping the
-- group's already expired entries on the way (so abandoned keys never pile up).
--
-- KEYS[1] values  hash  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:values  key -> value
-- KEYS[2] expiry  zset  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:expiry  key -> expiry (ms)
-- ARGV[1] now (epoch ms, the caller's clock)
-- ARGV[2] expiry of the new values (epoch ms)
-- ARGV[3] key TTL in ms for both keys: the values' ttl plus a grace period. Only ever
--         raised, so a short-lived value never cuts a longer-lived one short.
-- ARGV[4..] pairs: key, value
-- Returns the number of values set.

local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for i = 1, #gone, 4000 do
  local slice = {unpack(gone, i, math.min(i + 3999, #gone))}
  redis.call('HDEL', KEYS[1], unpack(slice))
  redis.call('ZREM', KEYS[2], unpack(slice))
end
local n = 0
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[i])
  n = n + 1
end
local ttl = tonumber(ARGV[3])
for _, key in ipairs(KEYS) do
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIRE', key, ttl)
  end
end
return n
