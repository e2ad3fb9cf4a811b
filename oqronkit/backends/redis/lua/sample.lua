-- requires: queue_lib.lua
-- sample.lua: a bounded look at one queue, read in one atomic step: up to a limit of
-- ready, delayed and leased job ids, and the leases that lapse first.
--
-- KEYS[1] ready    zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] leases   hash  oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- KEYS[4] expiry   zset  oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry   job id -> lease expiry (ms)
-- ARGV[1] limit (> 0)
-- Returns JSON [[job id, ...], [job id, token, expiry, ...]] (numbers as text).

local last = tonumber(ARGV[1]) - 1
local ids = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, last)) do ids[#ids + 1] = id end
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, last)) do ids[#ids + 1] = id end
local first = redis.call('ZRANGE', KEYS[4], 0, last, 'WITHSCORES')
local leased = {}
for i = 1, #first, 2 do leased[#leased + 1] = first[i] end
local leases = {}
if #leased > 0 then
  local held = read_chunked('HMGET', KEYS[3], leased)
  for i, id in ipairs(leased) do
    if held[i] then
      ids[#ids + 1] = id
      leases[#leases + 1] = id
      leases[#leases + 1] = lease_token(held[i])
      leases[#leases + 1] = first[2 * i]
    end
  end
end
return '[' .. reply(ids) .. ',' .. reply(leases) .. ']'
