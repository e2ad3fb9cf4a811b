-- kv_all.lua: every live value of one group (groups are small: workers, running runs).
--
-- KEYS[1] values  hash  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:values  key -> value
-- KEYS[2] expiry  zset  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:expiry  key -> expiry (ms)
-- ARGV[1] now (epoch ms, the caller's clock)
-- Returns {key, value, key, value, ...}. Read-only: expired entries are dropped by kv_set.

local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf')
local out = {}
for i = 1, #live, 4000 do
  local slice = {unpack(live, i, math.min(i + 3999, #live))}
  local values = redis.call('HMGET', KEYS[1], unpack(slice))
  for j = 1, #slice do
    if values[j] then
      out[#out + 1] = slice[j]
      out[#out + 1] = values[j]
    end
  end
end
return out
