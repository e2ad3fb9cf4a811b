-- requires: queue_lib.lua
-- present.lua: the job ids that are ready, delayed or leased, read in one atomic step
-- (separate reads could miss a job moving from ready to leased between them).
--
-- KEYS[1] ready    zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- ARGV[1] JSON array of job ids
-- Returns JSON: the ids present.

local ids = cjson.decode(ARGV[1])
local in_ready = read_chunked('ZMSCORE', KEYS[1], ids)
local in_delayed = read_chunked('ZMSCORE', KEYS[2], ids)
local in_leases = read_chunked('HMGET', KEYS[3], ids)
local found = {}
for i, id in ipairs(ids) do
  if in_ready[i] or in_delayed[i] or in_leases[i] then
    found[#found + 1] = id
  end
end
return reply(found)
