-- lock_release.lua: release a lock if the caller holds it.
--
-- KEYS[1] lock  string  oqron:<p>:<e>:lock:<name>  "<expires_at ms>|<owner>"
-- ARGV[1] owner
-- Returns 1 when released, 0 when the lock is not the caller's.

local held = redis.call('GET', KEYS[1])
if held and string.sub(held, string.find(held, '|', 1, true) + 1) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
