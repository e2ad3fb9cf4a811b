-- requires: queue_lib.lua
-- signal_lib.lua: the function signal_jobs(keys, argv), run by signal.lua and by
-- insert_and_signal.lua (a single add): make job ids claimable now, or due later. An id
-- already ready, delayed or leased in the queue is left as it is (signalling is
-- idempotent). It touches only the keys passed to it.
--
-- keys[1] ready    zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:ready    job id -> packed score
-- keys[2] delayed  zset    oqron:<p>:<e>:{<p>:<e>:<queue>}:delayed  job id -> run_at (ms)
-- keys[3] meta     hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:meta     job id -> "<priority>|<lifo>"
-- keys[4] leases   hash    oqron:<p>:<e>:{<p>:<e>:<queue>}:leases   job id -> "<token>|<worker>"
-- keys[5] seq      string  oqron:<p>:<e>:{<p>:<e>:<queue>}:seq      enqueue sequence
-- argv[1] now (epoch ms)
-- argv[2] wake-up channel oqron:<p>:<e>:{<p>:<e>:<queue>}:wake (PUBLISHed, not a key)
-- argv[3] JSON array of [job id, priority, run_at (epoch ms) or null, lifo (bool)]
-- argv[4] 'PUBLISH', or 'SPUBLISH' on a Redis Cluster (the channel is in the keys' slot)
-- argv[5] optional 'FRESH': the ids are of rows the calling script has just inserted
--         (insert_and_signal.lua), so none can be ready, delayed or leased yet: the
--         membership reads are skipped
-- Returns the number of jobs made ready. Publishes on the channel when a job became
-- ready or the earliest due time moved earlier (a waiter sized its sleep from it).

local function signal_jobs(keys, argv)
  local now = tonumber(argv[1])
  local signals = cjson.decode(argv[3])
  local ids = {}
  for i, s in ipairs(signals) do
    ids[i] = s[1]
  end
  local in_ready, in_delayed, in_leases = {}, {}, {}
  if argv[5] ~= 'FRESH' then
    in_ready = read_chunked('ZMSCORE', keys[1], ids)
    in_delayed = read_chunked('ZMSCORE', keys[2], ids)
    in_leases = read_chunked('HMGET', keys[4], ids)
  end
  local seen = {}
  local ready, priorities, lifos = {}, {}, {}
  local delayed, metas = {}, {}
  for i, s in ipairs(signals) do
    local id = s[1]
    if not seen[id] and not in_ready[i] and not in_delayed[i] and not in_leases[i] then
      seen[id] = true
      local priority, run_at, lifo = s[2], s[3], s[4]
      if run_at ~= cjson.null and run_at > now then
        delayed[#delayed + 1] = exact(run_at)
        delayed[#delayed + 1] = id
        metas[#metas + 1] = id
        metas[#metas + 1] = pack_meta(priority, lifo)
      else
        ready[#ready + 1] = id
        priorities[#priorities + 1] = priority
        lifos[#lifos + 1] = lifo
      end
    end
  end
  make_ready(keys[1], keys[5], ready, priorities, lifos)
  -- The earliest due time matters only when no job became ready (a wake-up goes out then
  -- anyway), so a plain add reads the delayed set not at all.
  local moved_earlier = false
  if #delayed > 0 then
    local before = #ready == 0 and earliest(keys[2])
    call_chunked('ZADD', keys[2], delayed)
    call_chunked('HSET', keys[3], metas)
    if #ready == 0 then
      local after = earliest(keys[2])
      moved_earlier = after and (not before or after < before)
    end
  end
  if #ready > 0 or moved_earlier then
    redis.call(argv[4], argv[2], #ready)
  end
  return #ready
end
