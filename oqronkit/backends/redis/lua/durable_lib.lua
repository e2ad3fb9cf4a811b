-- durable_lib.lua: every write of the Redis durable store, as one atomic batch of
-- operations grouped by (table, namespace): the function durable_write(keys, argv), run
-- by durable_write.lua (put_many, apply, insert_many, delete_many, compare_and_set and
-- both prunes) and insert_and_signal.lua (a single add), so a row and all its index
-- entries change together, in this one file. It touches only the keys passed to it.
--
-- A row is stored as "<ins16><st16><hlen6><header><json>": ins16 is inserted_at as 16
-- zero-padded digits; st16 the sortable key of a numeric startedAt (16 hex digits) or 16
-- '-'; hlen6 the header's length in 6 digits; the header an ASCII JSON array
-- [expires_at text or null, kind, status, name, module] (the filter fields: strings or
-- null). Index members are ins16..id or st16..id in score-0 sorted sets, so they sort
-- by (key, id) under ZRANGEBYLEX.
--
-- durable_write's keys and argv (durable_write.lua passes its KEYS and ARGV):
-- B = oqron:<p>:<e>:durable:{<p>:<e>:durable}:  (ARGV[1]; every key below starts with it)
-- KEYS come in fives, one five per group g (1-based), in the order of the groups in ARGV:
-- KEYS[5g-4] rows  hash  B rows:<table>:<ns>   id -> row
-- KEYS[5g-3] ins   zset  B ins:<table>:<ns>    ins16..id
-- KEYS[5g-2] st    zset  B st:<table>:<ns>     st16..id
-- KEYS[5g-1] nsk   hash  B nsk:<table>         namespace -> kind
-- KEYS[5g]   exp   zset  B exp:<table>         "<byte length of ns>:<ns><id>" -> expires_at
-- Filter indexes, named here from the rows' own field values (so not in KEYS; they carry
-- the same hash tag, hence the same Cluster slot, as the declared keys):
--            zset  B fx:<table>:i:<field>:<byte length of ns>:<ns>:<value>   ins16..id
--            zset  B fx:<table>:s:<field>:<byte length of ns>:<ns>:<value>   st16..id
--            for field in status, name, module, when the row's field is a string.
-- ARGV[1] B
-- ARGV[2..] per group: table, namespace, kind ('' when the group writes no row), number of
-- operations, then per operation four values: code, id, payload, expected. Codes:
--   P  upsert payload (an existing row keeps its inserted_at)
--   N  insert payload only if the id is free
--   F  as N, but a taken id stops the batch: every later operation is not done
--   S  swap: only if the stored row is exactly `expected`, write payload (delete if '')
--   D  delete
--   X  delete if the row's expires_at is at or before payload (now, epoch ms)
--   O  delete if the row's ins16 sorts before payload (a cutoff's ins16)
-- Returns one 1 (done) or 0 (not done) per operation, in order.

local NO_START = '----------------'
local FIELDS = {'status', 'name', 'module'}

local function header(row)
  return cjson.decode(string.sub(row, 39, 38 + tonumber(string.sub(row, 33, 38))))
end

-- Add (ZADD) or drop (ZREM) every index entry of a row but the inserted-order one.
local function reindex(k, row, id, command)
  local ins, st, h = string.sub(row, 1, 16), string.sub(row, 17, 32), header(row)
  local entries = {}
  if st ~= NO_START then
    entries[#entries + 1] = {k.st, st .. id}
  end
  for f = 1, #FIELDS do
    local value = h[f + 2]
    if value ~= cjson.null then
      local suffix = FIELDS[f] .. ':' .. k.ns_part .. value
      entries[#entries + 1] = {k.fx .. 'i:' .. suffix, ins .. id}
      if st ~= NO_START then
        entries[#entries + 1] = {k.fx .. 's:' .. suffix, st .. id}
      end
    end
  end
  for _, entry in ipairs(entries) do
    if command == 'ZADD' then
      redis.call('ZADD', entry[1], 0, entry[2])
    else
      redis.call('ZREM', entry[1], entry[2])
    end
  end
  if h[1] ~= cjson.null then
    if command == 'ZADD' then
      redis.call('ZADD', k.exp, h[1], k.mark .. id)
    else
      redis.call('ZREM', k.exp, k.mark .. id)
    end
  end
end

local function write(k, old, id, row)
  if old then
    reindex(k, old, id, 'ZREM')
    row = string.sub(old, 1, 16) .. string.sub(row, 17)
  else
    redis.call('ZADD', k.ins, 0, string.sub(row, 1, 16) .. id)
  end
  redis.call('HSET', k.rows, id, row)
  reindex(k, row, id, 'ZADD')
end

local function delete(k, old, id)
  k.deleted = true
  reindex(k, old, id, 'ZREM')
  redis.call('ZREM', k.ins, string.sub(old, 1, 16) .. id)
  redis.call('HDEL', k.rows, id)
end

-- Apply one batch: keys and argv are durable_write's KEYS and ARGV (above); returns one
-- 1 (done) or 0 (not done) per operation, in order.
local function durable_write(keys, argv)
  local base = argv[1]
  local results = {}
  local stopped = false  -- set by a taken 'F' (a guarded insert)
  local a, g = 2, 0
  while a <= #argv do
    g = g + 1
    local tbl, ns, kind, count = argv[a], argv[a + 1], argv[a + 2], tonumber(argv[a + 3])
    a = a + 4
    local k = {rows = keys[5 * g - 4], ins = keys[5 * g - 3], st = keys[5 * g - 2], nsk = keys[5 * g - 1],
               exp = keys[5 * g], fx = base .. 'fx:' .. tbl .. ':', mark = string.len(ns) .. ':' .. ns,
               ns_part = string.len(ns) .. ':' .. ns .. ':'}
    local wrote = false
    for _ = 1, count do
      local code, id, payload, expected = argv[a], argv[a + 1], argv[a + 2], argv[a + 3]
      a = a + 4
      local done = 0
      local insert = code == 'N' or code == 'F'
      -- An insert tests and sets the row in one call (HSETNX), then indexes it as write() does.
      local old = not stopped and not insert and redis.call('HGET', k.rows, id)
      if stopped then
        done = 0
      elseif insert then
        if redis.call('HSETNX', k.rows, id, payload) == 1 then
          redis.call('ZADD', k.ins, 0, string.sub(payload, 1, 16) .. id)
          reindex(k, payload, id, 'ZADD')
          wrote = true
          done = 1
        elseif code == 'F' then
          stopped = true
        end
      elseif code == 'P' or (code == 'S' and old == expected and payload ~= '') then
        write(k, old, id, payload)
        wrote = true
        done = 1
      elseif old and (code == 'D' or (code == 'S' and old == expected)) then
        delete(k, old, id)
        done = 1
      elseif code == 'X' then
        if not old then
          redis.call('ZREM', k.exp, k.mark .. id)  -- heal a stray entry rather than trip on it forever
        else
          local expires = header(old)[1]
          if expires ~= cjson.null and tonumber(expires) <= tonumber(payload) then
            delete(k, old, id)
            done = 1
          end
        end
      elseif old and code == 'O' and string.sub(old, 1, 16) < payload then
        delete(k, old, id)
        done = 1
      end
      results[#results + 1] = done
    end
    -- The namespace registry lists exactly the namespaces holding rows ('' kind: the
    -- group only deleted, so an existing entry is already right). A group that wrote a
    -- row and deleted none holds rows for sure: no EXISTS needed.
    if wrote and not k.deleted then
      if kind ~= '' then
        redis.call('HSET', k.nsk, ns, kind)
      end
    elseif redis.call('EXISTS', k.rows) == 0 then
      redis.call('HDEL', k.nsk, ns)
    elseif kind ~= '' then
      redis.call('HSET', k.nsk, ns, kind)
    end
  end
  return results
end
