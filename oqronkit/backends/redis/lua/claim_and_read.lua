-- requires: queue_lib.lua
-- claim_and_read.lua: a claim (as claim.lua) that also returns the claimed jobs' durable
-- rows, so a redis-mode worker pays one round trip from its wake-up to its jobs. Its keys
-- span two hash tags (the queue's and the scope's durable one), so it runs only on a
-- standalone Redis serving both planes, never on a Cluster (store.py checks).
--
-- KEYS[1..7] claim.lua's keys: the queue's ready, delayed, meta, leases, expiry, seq, token
--            (oqron:<p>:<e>:{<p>:<e>:<queue>}:<part>)
-- KEYS[8]    rows  hash  oqron:<p>:<e>:durable:{<p>:<e>:durable}:rows:<table>:<ns>  id -> row
--            (durable_lib.lua's row format)
-- ARGV[1..5] claim.lua's: now, limit, lease expiry, worker id, most due jobs promoted
-- Returns {JSON [first token (text), job id, ...] in claim order (as claim.lua), then one
-- row per claimed id in that order (nil for a row that is gone: deleted while signalled)}.

promote_due(KEYS[1], KEYS[2], KEYS[3], KEYS[6], ARGV[1], tonumber(ARGV[5]))

local first, ids = lease_ready(KEYS[1], KEYS[4], KEYS[5], KEYS[7], ARGV[2], ARGV[3], ARGV[4])
if not first then
  return {'[]'}
end
local claimed = {exact(first)}
for i = 1, #ids do
  claimed[i + 1] = ids[i]
end
local out = {reply(claimed)}
local rows = read_chunked('HMGET', KEYS[8], ids)
for i = 1, #ids do
  out[i + 1] = rows[i]
end
return out
