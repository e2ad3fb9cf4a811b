-- requires: queue_lib.lua
-- remove.lua: remove job ids from ready and delayed (leases are left alone).
--
-- KEYS[1] ready    zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] meta     hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- ARGV[1] JSON array of job ids
-- Returns JSON: the ids removed.

local ids = cjson.decode(ARGV[1])
local in_ready = read_chunked('ZMSCORE', KEYS[1], ids)
local in_delayed = read_chunked('ZMSCORE', KEYS[2], ids)
local seen, ready, delayed, removed = {}, {}, {}, {}
for i, id in ipairs(ids) do
  if not seen[id] and (in_ready[i] or in_delayed[i]) then
    seen[id] = true
    removed[#removed + 1] = id
    if in_ready[i] then
      ready[#ready + 1] = id
    else
      delayed[#delayed + 1] = id
    end
  end
end
call_chunked('ZREM', KEYS[1], ready)
call_chunked('ZREM', KEYS[2], delayed)
call_chunked('HDEL', KEYS[3], delayed)
return reply(removed)
