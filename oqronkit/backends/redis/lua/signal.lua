-- requires: queue_lib.lua
-- signal.lua: make job ids claimable now, or due later. An id already ready, delayed or
-- leased in the queue is left as it is (signalling is idempotent).
--
-- KEYS[1] ready    zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- KEYS[2] delayed  zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- KEYS[3] meta     hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- KEYS[4] leases   hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- KEYS[5] seq      string  oqron:<p>:<e>:{<p>:<e>:<queue>}:seq      enqueue sequence
-- ARGV[1] now (epoch ms)
-- ARGV[2] wake-up channel oqron:<p>:<e>:{<p>:<e>:<queue>}:wake (PUBLISHed, not a key)
-- ARGV[3..] groups of four: job id, priority, run_at (epoch ms, or '' for now), '1' for LIFO
-- Returns the number of jobs made ready. Publishes on the channel when a job became
-- ready or the earliest due time moved earlier (a waiter sized its sleep from it).

local now = tonumber(ARGV[1])
local before = earliest(KEYS[2])
local seen = {}
local ids, priorities, lifos = {}, {}, {}
local delayed, metas = {}, {}
for i = 3, #ARGV, 4 do
  local id = ARGV[i]
  if not seen[id] and not redis.call('ZSCORE', KEYS[1], id) and not redis.call('ZSCORE', KEYS[2], id)
      and redis.call('HEXISTS', KEYS[4], id) == 0 then
    seen[id] = true
    local priority, run_at, lifo = tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3] == '1'
    if run_at ~= '' and tonumber(run_at) > now then
      delayed[#delayed + 1] = run_at
      delayed[#delayed + 1] = id
      metas[#metas + 1] = id
      metas[#metas + 1] = pack_meta(priority, lifo)
    else
      ids[#ids + 1] = id
      priorities[#priorities + 1] = priority
      lifos[#lifos + 1] = lifo
    end
  end
end
make_ready(KEYS[1], KEYS[5], ids, priorities, lifos)
if #delayed > 0 then
  call_chunked('ZADD', KEYS[2], delayed)
  call_chunked('HSET', KEYS[3], metas)
end
local after = earliest(KEYS[2])
if #ids > 0 or (after and (not before or after < before)) then
  redis.call('PUBLISH', ARGV[2], #ids)
end
return #ids
