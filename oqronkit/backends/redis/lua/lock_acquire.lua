-- lock_acquire.lua: take a lock that is free or lapsed, or renew it for its owner.
--
-- KEYS[1] lock  string  oqron:<p>:<e>:lock:<name>  "<expires_at ms>|<owner>"
-- ARGV[1] owner
-- ARGV[2] now (epoch ms, the caller's clock)
-- ARGV[3] new expiry (epoch ms)
-- ARGV[4] key TTL in ms (PX): the lock's ttl plus a grace period
-- Returns 1 when the caller holds the lock, 0 when someone else does.
--
-- Expiry is judged by the callers' clock (ARGV[2] against the stored expiry), as on every
-- backend; PX only lets Redis drop a lock nobody renews, and its grace covers clock skew
-- between the callers and the server.

local held = redis.call('GET', KEYS[1])
if held then
  local bar = string.find(held, '|', 1, true)
  local owner = string.sub(held, bar + 1)
  if owner ~= ARGV[1] and tonumber(string.sub(held, 1, bar - 1)) > tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[3] .. '|' .. ARGV[1], 'PX', ARGV[4])
return 1
