-- requires: durable_lib.lua
-- requires: signal_lib.lua
-- insert_and_signal.lua: a single add in redis mode, one round trip: insert the job's
-- row (durable_write, durable_lib.lua) and, only if it was inserted, signal the job
-- (signal_jobs, signal_lib.lua), atomically. Its keys span two hash tags (the scope's
-- durable one and the queue's), so it runs only on a standalone Redis serving both
-- planes, never on a Cluster (store.py checks).
--
-- KEYS[1 .. #KEYS-5]   durable_write's keys (rows, ins, st, nsk, exp per group; durable_lib.lua)
-- KEYS[#KEYS-4 .. ]    signal_jobs' keys: the queue's ready, delayed, meta, leases, seq
--                      (oqron:<p>:<e>:{<p>:<e>:<queue>}:<part>; signal_lib.lua)
-- ARGV[1]              n: how many of the following values are durable_write's argv
-- ARGV[2 .. n+1]       durable_write's argv (the scope's durable base, then the groups)
-- ARGV[n+2 .. n+5]     signal_jobs' argv: now, wake-up channel, signals JSON, 'PUBLISH'
-- Returns durable_write's results (one 1 or 0 per operation); the signal is sent only
-- when every operation was done (a taken id signals nothing).

local n = tonumber(ARGV[1])
local durable_keys, durable_argv, signal_keys, signal_argv = {}, {}, {}, {}
for i = 1, #KEYS - 5 do
  durable_keys[i] = KEYS[i]
end
for i = 1, 5 do
  signal_keys[i] = KEYS[#KEYS - 5 + i]
end
for i = 1, n do
  durable_argv[i] = ARGV[i + 1]
end
for i = n + 2, #ARGV do
  signal_argv[#signal_argv + 1] = ARGV[i]
end
local results = durable_write(durable_keys, durable_argv)
for _, done in ipairs(results) do
  if done ~= 1 then
    return results
  end
end
signal_jobs(signal_keys, signal_argv)
return results
