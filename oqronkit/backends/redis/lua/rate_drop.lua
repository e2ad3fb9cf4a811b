-- rate_drop.lua: forget parts of one key's rate-limit state (a reset, an unban, a
-- cleared override): the named fields of its hash and the logs of its exact sliding
-- windows, at once.
--
-- KEYS[1]    state  hash  oqron:<p>:<e>:rate:<len(name)>:<name>:<key>  (see rate_hit.lua)
-- KEYS[2..]  log    list  oqron:<p>:<e>:ratelog:{<the hash's slot text>}:<period>:...  deleted
-- ARGV[1..]  the hash's fields to drop
-- Returns 1.

redis.call('HDEL', KEYS[1], unpack(ARGV))
for i = 2, #KEYS do
  redis.call('DEL', KEYS[i])
end
return 1
