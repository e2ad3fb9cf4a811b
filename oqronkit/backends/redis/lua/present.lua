-- present.lua: the job ids that are ready, delayed or leased, read in one atomic step
-- (separate reads could miss a job moving from ready to leased between them).
--
-- KEYS[1] ready    zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- ARGV[1..] job ids
-- Returns the ids present.

local found = {}
for i = 1, #ARGV do
  local id = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], id) or redis.call('ZSCORE', KEYS[2], id)
      or redis.call('HEXISTS', KEYS[3], id) == 1 then
    found[#found + 1] = id
  end
end
return found
