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

promote_due(KEYS[1], KEYS[2], KEYS[3], KEYS[6], ARGV[1], tonumber(ARGV[5]))

local first, ids = lease_ready(KEYS[1], KEYS[4], KEYS[5], KEYS[7], ARGV[2], ARGV[3], ARGV[4])
if not first then
  return '[]'
end
local out = {exact(first)}
for i = 1, #ids do
  out[i + 1] = ids[i]
end
return reply(out)
