-- requires: durable_lib.lua
-- requires: signal_lib.lua
-- insert_and_signal.lua: a single add in redis mode, one round trip: insert the job's
-- row (durable_write, durable_lib.lua) and, only if it was inserted, signal the job
-- (signal_jobs, signal_lib.lua), atomically. Its keys span two hash tags (the scope's
-- durable one and the queue's), so it runs only on a standalone Redis serving both
-- planes, never on a Cluster (store.py checks).
--
-- Every key is named here from two prefixes rather than passed in KEYS: a single add is
-- one call of about ten short arguments instead of 24 (redis-py packs each argument in
-- Python, about 1 us apiece), and a standalone server needs no declared keys to route it.
-- B = oqron:<p>:<e>:durable:{<p>:<e>:durable}:   the scope's durable base (durable_lib.lua)
--     B rows:<table>:<ns>, B ins:<table>:<ns>, B st:<table>:<ns>, B nsk:<table>, B exp:<table>
--     and the filter indexes durable_lib.lua names from the rows (B fx:...)
-- Q = oqron:<p>:<e>:{<p>:<e>:<queue>}:           the queue's prefix (signal_lib.lua)
--     Q ready, Q delayed, Q meta, Q leases, Q seq; the wake-up channel Q wake (PUBLISHed)
--
-- KEYS                 none
-- ARGV[1]              B
-- ARGV[2]              Q
-- ARGV[3]              now (epoch ms)
-- ARGV[4]              signals JSON: [[job id, priority, run_at or null, lifo], ...]
-- ARGV[5 ..]           per (table, namespace) group: table, namespace, kind, count n,
--                      then n pairs of id and encoded row (rows.py), each a fresh insert
--                      ('F': a taken id stops the batch, so no later row is written)
-- Returns durable_write's results (one 1 or 0 per row); the signal is sent only when
-- every row was inserted (a taken id signals nothing).

local base, prefix = ARGV[1], ARGV[2]
local durable_keys, durable_argv = {}, {base}
local a = 5
while a <= #ARGV do
  local tbl, ns, kind, count = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  local part = tbl .. ':' .. ns
  for _, key in ipairs({'rows:' .. part, 'ins:' .. part, 'st:' .. part, 'nsk:' .. tbl, 'exp:' .. tbl}) do
    durable_keys[#durable_keys + 1] = base .. key
  end
  for _, value in ipairs({tbl, ns, kind, tostring(count)}) do
    durable_argv[#durable_argv + 1] = value
  end
  a = a + 4
  for _ = 1, count do
    for _, value in ipairs({'F', ARGV[a], ARGV[a + 1], ''}) do
      durable_argv[#durable_argv + 1] = value
    end
    a = a + 2
  end
end
local results = durable_write(durable_keys, durable_argv)
for _, done in ipairs(results) do
  if done ~= 1 then
    return results
  end
end
signal_jobs({prefix .. 'ready', prefix .. 'delayed', prefix .. 'meta', prefix .. 'leases', prefix .. 'seq'},
            {ARGV[3], prefix .. 'wake', ARGV[4], 'PUBLISH', 'FRESH'})
return results
