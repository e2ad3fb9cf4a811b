-- rate_hit.lua: check one key against every tier of a limiter; all tiers take the cost or
-- none does (cost 0 is a peek and writes nothing but a log started from old counts). A
-- port of backends/rate_step.py: keep the two (and postgres' oqron_rate_hit) in step.
-- Numbers are integers below 2^53.
--
-- KEYS[1]     state  hash  oqron:<p>:<e>:rate:<len(name)>:<name>:<key> (keys.py: rate_keys)
--                          "<state name>:<period>" -> "n:n[:n]" per tier (the exact sliding
--                          window's: "newest:in window"), "ban" -> "start:strikes:until",
--                          "ov" -> "limit:limit:..." (the key's override, one per tier)
-- KEYS[1+i]   log    list  oqron:<p>:<e>:ratelog:{<the hash's slot text>}:<period>:<len(name)>:<name>:<key>
--                          tier i's unit times (ms, ascending), read and written only when
--                          tier i is an exact sliding window: at most its newest 2 x limit
-- ARGV[1] now (epoch ms, the caller's clock)
-- ARGV[2] cost (>= 0)
-- ARGV[3] key TTL in ms (only ever raised)
-- ARGV[4] the ban, "strikes:window ms:duration ms", or "0": no bans (read on a refusal only)
-- ARGV[5..] per tier: algorithm, limit, period ms, its field (Tier.field)
-- Returns "allowed(0/1):limit:remaining:reset(epoch ms):retry_after ms:banned(0/1):tier"
-- (the binding tier's index from 0), one bulk string: cheaper to read than an array.
--
-- Every call runs this whole chunk, and text <-> number conversions are most of its cost:
-- one tier (the common shape) builds no tables, numbers are parsed only where used, and
-- texts that did not change (a window's index, a limit) are copied, not formatted again.
-- An exact sliding window reads a few units of its log near the window's edge (LINDEX
-- from the newest end), never the whole log.

local floor, tonumber, match, format = math.floor, tonumber, string.match, string.format
local key, now, cost = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local count = (#ARGV - 4) / 4

-- The key outlives its last write by the TTL: raised, never lowered.
local function keep_ttl(existed)
  if existed and redis.REDIS_VERSION_NUM then  -- 7.0+; a key that existed has a TTL
    redis.call('PEXPIRE', key, ARGV[3], 'GT')
  elseif redis.call('PTTL', key) < tonumber(ARGV[3]) then
    redis.call('PEXPIRE', key, ARGV[3])
  end
end

-- The exact sliding window (rate_step._log and its helpers). unit(log, k): the k-th
-- newest unit's time, nil past the oldest.
local function unit(log, k)
  if k < 1 then return nil end
  return tonumber(redis.call('LINDEX', log, -k))
end

local function bisect(log, lo, hi, bound)
  while hi - lo > 1 do
    local mid = floor((lo + hi) / 2)
    local found = unit(log, mid)
    if found and found >= bound then lo = mid else hi = mid end
  end
  return lo
end

local function fewer(log, known, bound)
  local found = unit(log, known)
  if found and found >= bound then return known end
  local hi, step = known, 1
  local lo = hi - step
  while lo > 0 do
    found = unit(log, lo)
    if found and found >= bound then break end
    hi, step = lo, step * 2
    lo = hi - step
  end
  return bisect(log, math.max(lo, 0), hi, bound)
end

local function more(log, known, bound)
  local lo, step = known, 1
  local hi = lo + step
  while true do
    local found = unit(log, hi)
    if not found or found < bound then break end
    lo, step = hi, step * 2
    hi = lo + step
  end
  return bisect(log, lo, hi, bound)
end

-- Append `units` copies of time `at` to a log, keep its newest 2 x limit, renew its TTL.
local function append(log, at, units, limit)
  local text, batch = format('%d', at), {}
  for i = 1, math.min(units, 4000) do batch[i] = text end
  local size = 0
  while units > 0 do
    local n = math.min(units, #batch)
    size = redis.call('RPUSH', log, unpack(batch, 1, n))
    units = units - n
  end
  if size > 2 * limit then redis.call('LTRIM', log, -2 * limit, -1) end
  redis.call('PEXPIRE', log, ARGV[3])
end

-- A log not started yet starts from the two-window counts under its period, logged at
-- the latest time any of them can have been counted (rate_step._from_counts); the counts
-- are dropped. Returns the tier's new text (nil: no log).
local function from_counts(log, field, period, limit)
  local counts = 'sliding-window:' .. period
  local text = redis.call('HGET', key, counts)
  if not text then return nil end
  redis.call('HDEL', key, counts)
  local w, cur, prev = match(text, '^([^:]+):([^:]+):([^:]+)')
  local latest = math.min(math.max(now, tonumber(w) * period), (tonumber(w) + 1) * period - 1)
  local units = tonumber(cur) + tonumber(prev)
  if units == 0 or latest < now - period then return nil end
  redis.call('DEL', log)
  append(log, latest, units, math.max(limit, units))
  text = format('%d:%d', latest, units)
  redis.call('HSET', key, field, text)
  keep_ttl(true)
  return text
end

-- An exact sliding window on its header text: as step below, plus the time its units go
-- to in the log (nil: nothing to log).
local function log_step(log, text, limit, period)
  local newest, held = now, 0
  if text then
    local a, b = match(text, '^([^:]+):([^:]+)')
    newest, held = tonumber(a), tonumber(b)
  end
  local t = math.max(now, newest - period)  -- a clock over a period behind counts as one period behind
  local at = math.max(t, newest)
  if t > newest then
    if newest >= t - period then held = fewer(log, held, t - period) else held = 0 end
  end
  local used = held
  if t < newest then used = more(log, held, t - period) end  -- a lagging clock counts from its own edge
  local ok = used + cost <= limit
  local after = ok and used + cost or used
  local retry = 0
  if not ok then
    local frees
    if cost <= limit then frees = unit(log, limit - cost + 1) elseif used > 0 then frees = newest end
    retry = frees and frees + period + 1 - now or period + 1
  end
  if not (ok and cost > 0) then
    return ok, limit, limit - after, after > 0 and newest + period + 1 or now, retry, nil, nil
  end
  return ok, limit, limit - after, at + period + 1, 0, format('%d:%d', at, held + cost), at
end

-- One tier on its stored text: allowed, limit, remaining, reset, retry after, the text
-- to store if every tier allows (nil for a peek or a refusal), and (the exact sliding
-- window only) the time its units go to in its log.
local function step(algorithm, text, limit, period, log)
  local t, sa, sb, sc, a, b = now, nil, nil, nil, nil, nil
  local write = cost > 0
  if algorithm == 'sliding-window' then return log_step(log, text, limit, period) end
  if algorithm == 'sliding-window-approx' then
    if text then sa, sb, sc = match(text, '^([^:]+):([^:]+):([^:]+)') a, b = tonumber(sa), tonumber(sb) end
    local w = floor(t / period)
    if a and a > w then w, t = a, a * period end
    local cur, prev = 0, 0
    if a == w then cur, prev = b, tonumber(sc) elseif a == w - 1 then prev = b end
    local elapsed = t - w * period
    local used = cur + floor(prev * (period - elapsed) / period)
    local ok = used + cost <= limit
    if ok then
      if not write then text = nil
      elseif a == w then text = format('%s:%d:%s', sa, cur + cost, sc)
      else text = format('%d:%d:%d', w, cur + cost, prev) end
      return true, limit, limit - used - cost, (w + 1) * period, 0, text
    end
    local retry
    local room = limit - cur - cost
    local first = period
    if room >= 0 and prev > 0 then first = period + floor(-((room + 1) * period) / prev) + 1 end
    if first < period then
      retry = first - elapsed
    else
      local later = 0
      if cur > 0 then later = math.max(0, period + floor(-((limit - cost + 1) * period) / cur) + 1) end
      retry = period - elapsed + later
    end
    return false, limit, limit - used, (w + 1) * period, retry, nil
  end
  if text then sa, sb = match(text, '^([^:]+):([^:]+)') a, b = tonumber(sa), tonumber(sb) end
  if algorithm == 'gcra' then
    local tat, frac = t, 0
    if a and a >= t then tat, frac = a, b end
    local spread = frac + cost * period
    local new_tat, new_frac = tat + floor(spread / limit), spread % limit
    local ahead = (new_tat - t) * limit + new_frac
    local ok = ahead <= period * limit
    local held = ok and ahead or (tat - t) * limit + frac
    local retry = ok and 0 or -floor(-(ahead - period * limit) / limit)
    text = ok and write and format('%d:%d', new_tat, new_frac) or nil
    return ok, limit, floor((period * limit - held) / period), t - floor(-held / limit), retry, text
  end
  if algorithm == 'fixed-window' then
    local w = floor(t / period)
    if a and a > w then w, t = a, a * period end
    local used = (a == w) and b or 0
    local ok = used + cost <= limit
    local reset = (w + 1) * period
    if not (ok and write) then text = nil
    elseif a == w then text = format('%s:%d', sa, used + cost)
    else text = format('%d:%d', w, used + cost) end
    return ok, limit, limit - (ok and used + cost or used), reset, ok and 0 or reset - t, text
  end
  local full = limit * period  -- token-bucket: levels are tokens x period
  local level = full
  if a then
    level = math.min(full, b + math.max(0, t - a) * limit)
    t = math.max(t, a)
  end
  local need = cost * period
  local ok = level >= need
  local after = ok and level - need or level
  local retry = ok and 0 or -floor(-(need - level) / limit)
  text = ok and write and format('%d:%d', t, level - need) or nil
  return ok, limit, floor(after / period), t - floor(-(full - after) / limit), retry, text
end

local stored, existed, ok, limit, remaining, reset, retry, index, text, at, outcomes
if count == 1 then
  stored = redis.call('HMGET', key, 'ban', 'ov', ARGV[8])
  existed = stored[1] or stored[2] or stored[3]
else
  local fields = {'ban', 'ov'}
  for i = 1, count do fields[i + 2] = ARGV[4 + 4 * i] end
  stored = redis.call('HMGET', key, unpack(fields))
  for i = 1, count + 2 do existed = existed or stored[i] end
end
local ban_start, ban_strikes, ban_until
if stored[1] then
  ban_start, ban_strikes, ban_until = match(stored[1], '^([^:]+):([^:]+):([^:]+)')
  ban_start, ban_strikes, ban_until = tonumber(ban_start), tonumber(ban_strikes), tonumber(ban_until)
  if ban_until and ban_until > now then
    return format('0:%s:0:%d:%d:1:0', ARGV[6], ban_until, ban_until - now)
  end
end
for i = 1, count do  -- an exact sliding window with no log yet: start it from old counts
  if not stored[i + 2] and ARGV[1 + 4 * i] == 'sliding-window' then
    stored[i + 2] = from_counts(KEYS[1 + i], ARGV[4 + 4 * i], ARGV[3 + 4 * i], tonumber(ARGV[2 + 4 * i]))
    for j = 1, count do  -- the counts are gone for a tier that reads them too
      if ARGV[4 + 4 * j] == 'sliding-window:' .. ARGV[3 + 4 * i] then stored[j + 2] = false end
    end
  end
end
if count == 1 then
  local own = tonumber(stored[2])  -- an override of one tier is one number
  ok, limit, remaining, reset, retry, text, at = step(ARGV[5], stored[3], own or tonumber(ARGV[6]),
                                                      tonumber(ARGV[7]), KEYS[2])
  index = 1
  if ok and not own then  -- the common answer, its limit the argument's text
    if text then
      redis.call('HSET', key, ARGV[8], text)
      if at then append(KEYS[2], at, cost, limit) end
      keep_ttl(existed)
    end
    return format('1:%s:%d:%d:0:0:0', ARGV[6], remaining, reset)
  end
else
  local override = {}
  if stored[2] then for part in string.gmatch(stored[2], '[^:]+') do override[#override + 1] = tonumber(part) end end
  if #override ~= count then override = nil end
  outcomes, ok = {}, true
  for i = 1, count do
    local o = {step(ARGV[1 + 4 * i], stored[i + 2], override and override[i] or tonumber(ARGV[2 + 4 * i]),
                    tonumber(ARGV[3 + 4 * i]), KEYS[1 + i])}
    outcomes[i] = o
    ok = ok and o[1]
  end
  local binding
  for i = 1, count do
    local o = outcomes[i]
    if ok then
      if not binding or o[3] < binding[3] then binding, index = o, i end
    elseif not o[1] and (not binding or o[5] > binding[5]) then
      binding, index = o, i
    end
  end
  limit, remaining, reset, retry = binding[2], binding[3], binding[4], binding[5]
end
local banned = 0
if cost == 0 then
  -- a peek writes nothing
elseif ok then
  if count == 1 then
    redis.call('HSET', key, ARGV[8], text)
    if at then append(KEYS[2], at, cost, limit) end
  else
    local sets = {}
    for i = 1, count do
      local o = outcomes[i]
      sets[2 * i - 1], sets[2 * i] = ARGV[4 + 4 * i], o[6]
      if o[7] then append(KEYS[1 + i], o[7], cost, o[2]) end
    end
    redis.call('HSET', key, unpack(sets))
  end
  keep_ttl(existed)
elseif ARGV[4] ~= '0' then
  local strikes_max, ban_window, ban_for = match(ARGV[4], '^([^:]+):([^:]+):([^:]+)')
  strikes_max, ban_window, ban_for = tonumber(strikes_max), tonumber(ban_window), tonumber(ban_for)
  local start, strikes = now, 0
  if ban_start and now - ban_start < ban_window then start, strikes = ban_start, ban_strikes end
  strikes = strikes + 1
  if strikes >= strikes_max then
    redis.call('HSET', key, 'ban', format('%d:0:%d', now, now + ban_for))
    remaining, reset, retry, banned = 0, now + ban_for, ban_for, 1
  else
    redis.call('HSET', key, 'ban', format('%d:%d:0', start, strikes))
  end
  keep_ttl(existed)
end
return format('%d:%d:%d:%d:%d:%d:%d', ok and 1 or 0, limit, remaining, reset, retry, banned, index - 1)
