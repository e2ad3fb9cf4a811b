-- rate_override.lua: give one key of a rate limiter its own limits, one per tier.
--
-- KEYS[1] state  hash  oqron:<p>:<e>:rate:<len(name)>:<name>:<key>  (see rate_hit.lua)
-- ARGV[1] the limits, "limit:limit:..."
-- ARGV[2] key TTL in ms (only ever raised)
-- Returns 1.

redis.call('HSET', KEYS[1], 'ov', ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
