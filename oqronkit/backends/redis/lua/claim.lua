-- requires: queue_lib.lua
-- claim.lua: move due delayed jobs to ready (keeping their priority and LIFO flag), then
-- lease up to a limit of ready jobs in claim order, each under a fresh fencing token.
--
-- KEYS[1] ready    zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] meta     hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- KEYS[4] leases   hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- KEYS[5] expiry   zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry   job id -> lease expiry (ms)
-- KEYS[6] seq      string  oqron:<p>:<e>:{<p>:<e>:<queue>}:seq      enqueue sequence
-- KEYS[7] token    string  oqron:<p>:<e>:{<p>:<e>:<queue>}:token    last fencing token handed out
-- ARGV[1] now (epoch ms)
-- ARGV[2] limit (> 0)
-- ARGV[3] lease expiry (epoch ms)
-- ARGV[4] worker id
-- ARGV[5] most due jobs promoted by one call (bounds the script's run time)
-- Returns JSON [first token (text), job id, job id, ...] in claim order; the tokens are
-- consecutive from the first.

local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[5]))
if #due > 0 then
  -- Due order is (run_at, id): the order they would have become ready in.
  local metas = redis.call('HMGET', KEYS[3], unpack(due))
  local priorities, lifos = {}, {}
  for i = 1, #due do
    priorities[i], lifos[i] = unpack_meta(metas[i])
  end
  make_ready(KEYS[1], KEYS[6], due, priorities, lifos)
  redis.call('ZREM', KEYS[2], unpack(due))
  redis.call('HDEL', KEYS[3], unpack(due))
end

local taken = redis.call('ZPOPMIN', KEYS[1], ARGV[2])
local n = #taken / 2
if n == 0 then
  return '[]'
end
local first = redis.call('INCRBY', KEYS[7], n) - n + 1
local leases, expiries, out = {}, {}, {exact(first)}
for i = 1, n do
  local id = taken[2 * i - 1]
  leases[#leases + 1] = id
  leases[#leases + 1] = exact(first + i - 1) .. '|' .. ARGV[4]
  expiries[#expiries + 1] = ARGV[3]
  expiries[#expiries + 1] = id
  out[#out + 1] = id
end
call_chunked('HSET', KEYS[4], leases)
call_chunked('ZADD', KEYS[5], expiries)
return reply(out)
