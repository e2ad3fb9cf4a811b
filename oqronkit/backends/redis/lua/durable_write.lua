-- durable_write.lua: every write of the Redis durable store, as one atomic batch of
-- operations grouped by (table, namespace). put_many, apply, insert_many, delete_many,
-- compare_and_set and both prunes all come here, so the row and its indexes are kept in
-- step by this one file.
--
-- A row is stored as "<ins16><st16><expires>|<kind>|<json>": ins16 is inserted_at as 16
-- zero-padded digits, st16 the lexicographic key of startedAt (16 hex digits, or 16 '-'
-- when the row has no numeric startedAt), expires the epoch ms text or ''.
--
-- KEYS come in fives, one five per group g (1-based), in the order of the groups in ARGV:
-- KEYS[5g-4] rows  hash  oqron:<p>:<e>:durable:{<p>:<e>:durable}:rows:<table>:<ns>  id -> row
-- KEYS[5g-3] ins   zset  oqron:<p>:<e>:durable:{<p>:<e>:durable}:ins:<table>:<ns>   ins16..id (score 0)
-- KEYS[5g-2] st    zset  oqron:<p>:<e>:durable:{<p>:<e>:durable}:st:<table>:<ns>    st16..id (score 0)
-- KEYS[5g-1] nsk   hash  oqron:<p>:<e>:durable:{<p>:<e>:durable}:nsk:<table>        namespace -> kind
-- KEYS[5g]   exp   zset  oqron:<p>:<e>:durable:{<p>:<e>:durable}:exp:<table>
--                        "<byte length of ns>:<ns><id>" -> expires_at
-- ARGV[1..] per group: namespace, kind, number of operations, then per operation four
-- values: code, id, payload, expected. Codes:
--   P  upsert payload (an existing row keeps its inserted_at)
--   N  insert payload only if the id is free
--   S  swap: only if the stored row is exactly `expected`, write payload (delete if '')
--   D  delete
--   X  delete if the row's expires_at is at or before payload (now, epoch ms)
--   O  delete if the row's ins16 sorts before payload (a cutoff's ins16)
-- Returns one 1 (done) or 0 (not done) per operation, in order.

local NO_START = '----------------'

local function parse(row)
  local bar = string.find(row, '|', 33, true)
  return string.sub(row, 1, 16), string.sub(row, 17, 32), string.sub(row, 33, bar - 1)
end

local function unindex(k, old, id, mark)
  local ins, st, expires = parse(old)
  redis.call('ZREM', k.ins, ins .. id)
  if st ~= NO_START then
    redis.call('ZREM', k.st, st .. id)
  end
  if expires ~= '' then
    redis.call('ZREM', k.exp, mark .. id)
  end
end

local function write(k, old, id, row, mark)
  if old then
    unindex(k, old, id, mark)
    row = string.sub(old, 1, 16) .. string.sub(row, 17)
  end
  local ins, st, expires = parse(row)
  redis.call('HSET', k.rows, id, row)
  redis.call('ZADD', k.ins, 0, ins .. id)
  if st ~= NO_START then
    redis.call('ZADD', k.st, 0, st .. id)
  end
  if expires ~= '' then
    redis.call('ZADD', k.exp, expires, mark .. id)
  end
end

local function delete(k, old, id, mark)
  unindex(k, old, id, mark)
  redis.call('HDEL', k.rows, id)
end

local results = {}
local a, g = 1, 0
while a <= #ARGV do
  g = g + 1
  local k = {rows = KEYS[5 * g - 4], ins = KEYS[5 * g - 3], st = KEYS[5 * g - 2], nsk = KEYS[5 * g - 1],
             exp = KEYS[5 * g]}
  local ns, kind, count = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  local mark = string.len(ns) .. ':' .. ns
  a = a + 3
  for _ = 1, count do
    local code, id, payload, expected = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
    a = a + 4
    local old = redis.call('HGET', k.rows, id)
    local done = 0
    if code == 'P' or (code == 'N' and not old) or (code == 'S' and old == expected and payload ~= '') then
      write(k, old, id, payload, mark)
      done = 1
    elseif old and (code == 'D' or (code == 'S' and old == expected)) then
      delete(k, old, id, mark)
      done = 1
    elseif old and code == 'X' then
      local _, _, expires = parse(old)
      if expires ~= '' and tonumber(expires) <= tonumber(payload) then
        delete(k, old, id, mark)
        done = 1
      end
    elseif old and code == 'O' and string.sub(old, 1, 16) < payload then
      delete(k, old, id, mark)
      done = 1
    end
    results[#results + 1] = done
  end
  -- The namespace registry lists exactly the namespaces holding rows.
  if redis.call('EXISTS', k.rows) == 1 then
    redis.call('HSET', k.nsk, ns, kind)
  else
    redis.call('HDEL', k.nsk, ns)
  end
end
return results
