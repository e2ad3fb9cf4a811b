-- kv_get.lua: the live values among some keys of one group.
--
-- KEYS[1] values  hash  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:values  key -> value
-- KEYS[2] expiry  zset  oqron:<p>:<e>:kv:{<p>:<e>:kv:<group>}:expiry  key -> expiry (ms)
-- ARGV[1] now (epoch ms, the caller's clock)
-- ARGV[2..] keys
-- Returns {key, value, key, value, ...} for the keys still live at now.

local now = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  local expires = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if expires and tonumber(expires) > now then
    local value = redis.call('HGET', KEYS[1], ARGV[i])
    if value then
      out[#out + 1] = ARGV[i]
      out[#out + 1] = value
    end
  end
end
return out
