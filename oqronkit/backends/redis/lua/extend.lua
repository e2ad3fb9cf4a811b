-- requires: queue_lib.lua
-- extend.lua: renew leases still held with their token. A lease the plane lost entirely
-- (not leased, ready or delayed: e.g. after a Redis restart) is re-created for the same
-- token, and the token counter is raised past it so it is never handed out again.
--
-- KEYS[1] ready    zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] leases   hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- KEYS[4] expiry   zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:expiry   job id -> lease expiry (ms)
-- KEYS[5] token    string  oqron:<p>:<e>:{<p>:<e>:<queue>}:token    last fencing token handed out
-- ARGV[1] new lease expiry (epoch ms)
-- ARGV[2..] pairs: job id, token (integer text)
-- Returns the 1-based positions of the pairs renewed, in order. Pairs are handled one
-- after another, so of two pairs naming one id only the first can be renewed.

local out = {}
for i = 2, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local held = redis.call('HGET', KEYS[3], id)
  local keep = false
  if held then
    keep = lease_token(held) == token
  elseif not redis.call('ZSCORE', KEYS[1], id) and not redis.call('ZSCORE', KEYS[2], id) then
    keep = true
    redis.call('HSET', KEYS[3], id, token .. '|')
    local last = tonumber(redis.call('GET', KEYS[5]) or '0')
    if tonumber(token) > last then
      redis.call('SET', KEYS[5], token)
    end
  end
  if keep then
    redis.call('ZADD', KEYS[4], ARGV[1], id)
    out[#out + 1] = i / 2
  end
end
return out
