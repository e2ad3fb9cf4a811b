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
-- ARGV[2] JSON array of [job id, token (integer text)]
-- Returns JSON: the 1-based positions of the pairs renewed, in order. Pairs are handled
-- one after another, so of two pairs naming one id only the first can be renewed.

local pairs_ = cjson.decode(ARGV[2])
local ids = {}
for i, pair in ipairs(pairs_) do
  ids[i] = pair[1]
end
local held = read_chunked('HMGET', KEYS[3], ids)
local claimed = {}  -- ids settled earlier in this call
local renew, out = {}, {}
for i, pair in ipairs(pairs_) do
  local id, token = pair[1], pair[2]
  local keep = false
  if claimed[id] then
    keep = claimed[id] == token
  elseif held[i] then
    keep = lease_token(held[i]) == token
    claimed[id] = lease_token(held[i])
  elseif not redis.call('ZSCORE', KEYS[1], id) and not redis.call('ZSCORE', KEYS[2], id) then
    keep = true
    claimed[id] = token
    redis.call('HSET', KEYS[3], id, token .. '|')
    local last = tonumber(redis.call('GET', KEYS[5]) or '0')
    if tonumber(token) > last then
      redis.call('SET', KEYS[5], token)
    end
  end
  if keep then
    renew[#renew + 1] = ARGV[1]
    renew[#renew + 1] = id
    out[#out + 1] = i
  end
end
call_chunked('ZADD', KEYS[4], renew)
return reply(out)
