-- requires: signal_lib.lua
-- signal.lua: make job ids claimable now, or due later (signal_jobs in signal_lib.lua,
-- whose header lists the keys and arguments; KEYS and ARGV are passed as they come).
--
-- KEYS[1] ready    zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] meta     hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- KEYS[4] leases   hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- KEYS[5] seq      string  oqron:<p>:<e>:{<p>:<e>:<queue>}:seq      enqueue sequence
-- ARGV[1] now (epoch ms)
-- ARGV[2] wake-up channel oqron:<p>:<e>:{<p>:<e>:<queue>}:wake (PUBLISHed, not a key)
-- ARGV[3] JSON array of [job id, priority, run_at (epoch ms) or null, lifo (bool)]
-- ARGV[4] 'PUBLISH', or 'SPUBLISH' on a Redis Cluster (the channel is in the keys' slot)
-- Returns the number of jobs made ready.

return signal_jobs(KEYS, ARGV)
