-- remove.lua: remove job ids from ready and delayed (leases are left alone).
--
-- KEYS[1] ready    zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] meta     hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- ARGV[1..] job ids
-- Returns the ids removed.

local removed = {}
for i = 1, #ARGV do
  local id = ARGV[i]
  local gone = redis.call('ZREM', KEYS[1], id)
  if redis.call('ZREM', KEYS[2], id) == 1 then
    redis.call('HDEL', KEYS[3], id)
    gone = 1
  end
  if gone == 1 then
    removed[#removed + 1] = id
  end
end
return removed
