-- queue_lib.lua: helpers shared by the queue scripts. The loader (scripts.py) puts this
-- text in front of every script whose header says `-- requires: queue_lib.lua`. It
-- touches no key by itself: callers pass key names taken from their own KEYS.
--
-- Ready-set scores pack (priority DESC, enqueue sequence ASC, or DESC for LIFO) into one
-- double, exactly. Priorities are bounded to [-1000, 1000] (hot_types.py), so
-- (1000 - priority) picks one of 2001 bands of 2^42 scores; inside a band FIFO jobs count
-- up from 2^41 and LIFO jobs count down from it. 2001 * 2^42 < 2^53, so every score is an
-- integer a double holds exactly, and ZPOPMIN hands jobs out in claim order. A queue can
-- take 2^41 (2.2e12) enqueues before its sequence would spill into the next band.
--
-- Layouts used by the helpers:
--   ready  zset  job id -> packed score (above)
--   meta   hash  job id -> "<priority>|<1 for LIFO, else 0>" (delayed jobs only)
--   leases hash  job id -> "<token>|<worker id>"
--   seq    string, INCR'd: the queue's enqueue sequence

local BAND = 4398046511104
local MID = 2199023255552

-- Integer text with every digit: tostring() (and Lua's %.14g) keeps only 14 of them.
local function exact(n)
  return string.format('%.0f', n)
end

local function ready_score(priority, lifo, seq)
  if lifo then
    return (1000 - priority) * BAND + MID - seq
  end
  return (1000 - priority) * BAND + MID + seq
end

-- redis.call(command, key, ...) with args in slices: unpack() is bounded by Lua's C
-- stack (about 8000 values), and a claim or signal batch can be larger.
local function call_chunked(command, key, args)
  for i = 1, #args, 4000 do
    redis.call(command, key, unpack(args, i, math.min(i + 3999, #args)))
  end
end

local function pack_meta(priority, lifo)
  if lifo then
    return priority .. '|1'
  end
  return priority .. '|0'
end

-- (priority, lifo) of a delayed job; a missing entry (never expected) is plain FIFO.
local function unpack_meta(meta)
  if not meta then
    return 0, false
  end
  local bar = string.find(meta, '|', 1, true)
  return tonumber(string.sub(meta, 1, bar - 1)), string.sub(meta, bar + 1) == '1'
end

-- Make ids ready, in order, each with a fresh sequence number.
local function make_ready(ready_key, seq_key, ids, priorities, lifos)
  local n = #ids
  if n == 0 then
    return
  end
  local first = redis.call('INCRBY', seq_key, n) - n + 1
  local args = {}
  for i = 1, n do
    args[#args + 1] = exact(ready_score(priorities[i], lifos[i], first + i - 1))
    args[#args + 1] = ids[i]
  end
  call_chunked('ZADD', ready_key, args)
end

-- HMGET / ZMSCORE over any number of fields, in slices (see call_chunked); returns the
-- replies in field order (false for a missing one).
local function read_chunked(command, key, fields)
  local out = {}
  for i = 1, #fields, 4000 do
    local part = redis.call(command, key, unpack(fields, i, math.min(i + 3999, #fields)))
    for j = 1, #part do
      out[#out + 1] = part[j]
    end
  end
  return out
end

-- Batches travel as one JSON text each way: one argument to encode and one reply to
-- parse instead of hundreds (the client-side cost that dominated a 50-job batch).
-- cjson writes an empty table as {}, so an empty reply is spelled out.
local function reply(list)
  if #list == 0 then
    return '[]'
  end
  return cjson.encode(list)
end

-- The token text of a lease entry.
local function lease_token(lease)
  return string.sub(lease, 1, string.find(lease, '|', 1, true) - 1)
end

local function lease_worker(lease)
  return string.sub(lease, string.find(lease, '|', 1, true) + 1)
end

-- The earliest due time in a delayed set, or nil.
local function earliest(delayed_key)
  local first = redis.call('ZRANGE', delayed_key, 0, 0, 'WITHSCORES')
  if first[2] then
    return tonumber(first[2])
  end
  return nil
end

-- Move up to max_n due delayed jobs to ready, keeping their priority and LIFO flag.
local function promote_due(ready_key, delayed_key, meta_key, seq_key, now, max_n)
  local due = redis.call('ZRANGEBYSCORE', delayed_key, '-inf', now, 'LIMIT', 0, max_n)
  if #due > 0 then
    -- Due order is (run_at, id): the order they would have become ready in.
    local metas = redis.call('HMGET', meta_key, unpack(due))
    local priorities, lifos = {}, {}
    for i = 1, #due do
      priorities[i], lifos[i] = unpack_meta(metas[i])
    end
    make_ready(ready_key, seq_key, due, priorities, lifos)
    redis.call('ZREM', delayed_key, unpack(due))
    redis.call('HDEL', meta_key, unpack(due))
  end
end

-- Lease the first n ready jobs to worker until expires_at under fresh consecutive
-- tokens; returns the first token (nil when none was ready) and the ids in claim order.
local function lease_ready(ready_key, leases_key, expiry_key, token_key, n, expires_at, worker)
  local taken = redis.call('ZPOPMIN', ready_key, n)
  local count = #taken / 2
  if count == 0 then
    return nil, {}
  end
  local first = redis.call('INCRBY', token_key, count) - count + 1
  local leases, expiries, ids = {}, {}, {}
  for i = 1, count do
    local id = taken[2 * i - 1]
    leases[#leases + 1] = id
    leases[#leases + 1] = exact(first + i - 1) .. '|' .. worker
    expiries[#expiries + 1] = expires_at
    expiries[#expiries + 1] = id
    ids[i] = id
  end
  call_chunked('HSET', leases_key, leases)
  call_chunked('ZADD', expiry_key, expiries)
  return first, ids
end
