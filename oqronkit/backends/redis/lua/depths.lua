-- depths.lua: ready (including due delayed), delayed (not yet due) and leased counts,
-- read in one atomic step.
--
-- KEYS[1] ready    zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- ARGV[1] now (epoch ms)
-- Returns {ready, delayed, active}.

local due = redis.call('ZCOUNT', KEYS[2], '-inf', ARGV[1])
return {
  redis.call('ZCARD', KEYS[1]) + due,
  redis.call('ZCARD', KEYS[2]) - due,
  redis.call('HLEN', KEYS[3]),
}
