-- requires: queue_lib.lua
-- ack.lua: drop the leases whose token still matches.
--
-- KEYS[1] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases  job id -> "<token>|<worker>"
-- KEYS[2] expiry   zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry  job id -> lease expiry (ms)
-- ARGV[1] JSON array of [job id, token (integer text)]
-- Returns JSON: the job ids acknowledged.

local pairs_ = cjson.decode(ARGV[1])
local ids = {}
for i, pair in ipairs(pairs_) do
  ids[i] = pair[1]
end
local held = read_chunked('HMGET', KEYS[1], ids)
local seen, done = {}, {}
for i, pair in ipairs(pairs_) do
  local id = pair[1]
  if held[i] and not seen[id] and lease_token(held[i]) == pair[2] then
    seen[id] = true
    done[#done + 1] = id
  end
end
call_chunked('HDEL', KEYS[1], done)
call_chunked('ZREM', KEYS[2], done)
return reply(done)
