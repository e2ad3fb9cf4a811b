-- rate_hit.lua: check one key against every tier of a limiter; all tiers take the cost or
-- none does (cost 0 is a peek and writes nothing). A port of backends/rate_step.py: keep
-- the two (and postgres' oqron_rate_hit) in step. Numbers are integers below 2^53.
--
-- KEYS[1] state  hash  oqron:<p>:<e>:rate:<len(name)>:<name>:<key>
--                      "<algorithm>:<period>" -> "n:n[:n]" per tier, "ban" -> "start:strikes:until",
--                      "ov" -> "limit:limit:..." (the key's override, one per tier)
-- ARGV[1] now (epoch ms, the caller's clock)
-- ARGV[2] cost (>= 0)
-- ARGV[3] the limiter, one ':'-separated text (fewer arguments to encode per check):
--         key TTL in ms (only ever raised), ban strikes (0: no bans), ban window ms,
--         ban duration ms, then per tier: algorithm, limit, period ms
-- Returns "allowed(0/1):limit:remaining:reset(epoch ms):retry_after ms:banned(0/1):tier"
-- (the binding tier's index from 0), one bulk string: cheaper to read than an array.

local floor = math.floor
local function cdiv(a, b) return -floor(-a / b) end
local function nums(text)
  local out = {}
  if text then for part in string.gmatch(text, '[^:]+') do out[#out + 1] = tonumber(part) end end
  return out
end
local function pack(list)
  local out = {}
  for i = 1, #list do out[i] = string.format('%d', list[i]) end
  return table.concat(out, ':')
end
local function window(n, period, now)
  local w = floor(now / period)
  if n[1] and n[1] > w then return n[1], n[1] * period end
  return w, now
end

local algorithms = {}
algorithms['fixed-window'] = function(n, limit, period, cost, now)
  local w
  w, now = window(n, period, now)
  local used = (n[1] == w) and n[2] or 0
  local ok = used + cost <= limit
  local reset = (w + 1) * period
  local after = ok and used + cost or used
  return ok, limit, limit - after, reset, ok and 0 or reset - now, {w, used + cost}
end
algorithms['sliding-window'] = function(n, limit, period, cost, now)
  local w
  w, now = window(n, period, now)
  local cur, prev = 0, 0
  if n[1] == w then cur, prev = n[2], n[3] elseif n[1] == w - 1 then prev = n[2] end
  local elapsed = now - w * period
  local used = cur + floor(prev * (period - elapsed) / period)
  local ok = used + cost <= limit
  local retry = 0
  if not ok then
    local room = limit - cur - cost
    local first = period
    if room >= 0 and prev > 0 then first = period - cdiv((room + 1) * period, prev) + 1 end
    if first < period then
      retry = first - elapsed
    else
      local later = 0
      if cur > 0 then later = math.max(0, period - cdiv((limit - cost + 1) * period, cur) + 1) end
      retry = period - elapsed + later
    end
  end
  local after = ok and used + cost or used
  return ok, limit, limit - after, (w + 1) * period, retry, {w, cur + cost, prev}
end
algorithms['token-bucket'] = function(n, limit, period, cost, now)
  local full = limit * period
  local level = full
  if n[1] then
    level = math.min(full, n[2] + math.max(0, now - n[1]) * limit)
    now = math.max(now, n[1])
  end
  local need = cost * period
  local ok = level >= need
  local after = ok and level - need or level
  local retry = ok and 0 or cdiv(need - level, limit)
  return ok, limit, floor(after / period), now + cdiv(full - after, limit), retry, {now, level - need}
end
algorithms['gcra'] = function(n, limit, period, cost, now)
  local tat, frac = now, 0
  if n[1] and n[1] >= now then tat, frac = n[1], n[2] end
  local spread = frac + cost * period
  local new_tat, new_frac = tat + floor(spread / limit), spread % limit
  local ahead = (new_tat - now) * limit + new_frac
  local ok = ahead <= period * limit
  local held = ok and ahead or (tat - now) * limit + frac
  local retry = ok and 0 or cdiv(ahead - period * limit, limit)
  return ok, limit, floor((period * limit - held) / period), now + cdiv(held, limit), retry, {new_tat, new_frac}
end

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local spec = {}
for part in string.gmatch(ARGV[3], '[^:]+') do spec[#spec + 1] = part end
local ttl = tonumber(spec[1])
local strikes_max, ban_window, ban_for = tonumber(spec[2]), tonumber(spec[3]), tonumber(spec[4])
local fields = {'ban', 'ov'}
local tiers = {}
for i = 5, #spec, 3 do
  local field = spec[i] .. ':' .. spec[i + 2]
  tiers[#tiers + 1] = {spec[i], tonumber(spec[i + 1]), tonumber(spec[i + 2]), field}
  fields[#fields + 1] = field
end
local stored = redis.call('HMGET', KEYS[1], unpack(fields))
local ban = nums(stored[1])
if ban[3] and ban[3] > now then
  return pack({0, tiers[1][2], 0, ban[3], ban[3] - now, 1, 0})
end
local override = nums(stored[2])
local outcomes, all_ok = {}, true
for i, tier in ipairs(tiers) do
  local limit = (#override == #tiers) and override[i] or tier[2]
  local o = {algorithms[tier[1]](nums(stored[i + 2]), limit, tier[3], cost, now)}
  outcomes[i] = o
  all_ok = all_ok and o[1]
end
local binding, index
for i, o in ipairs(outcomes) do
  if all_ok then
    if not binding or o[3] < binding[3] then binding, index = o, i end
  elseif not o[1] and (not binding or o[5] > binding[5]) then
    binding, index = o, i
  end
end
local reply = {all_ok and 1 or 0, binding[2], binding[3], binding[4], binding[5], 0, index - 1}
if cost == 0 then return pack(reply) end
if all_ok then
  local sets = {}
  for i, tier in ipairs(tiers) do
    sets[#sets + 1] = tier[4]
    sets[#sets + 1] = pack(outcomes[i][6])
  end
  redis.call('HSET', KEYS[1], unpack(sets))
elseif strikes_max > 0 then
  local start, strikes = now, 0
  if ban[1] and now - ban[1] < ban_window then start, strikes = ban[1], ban[2] end
  strikes = strikes + 1
  if strikes >= strikes_max then
    redis.call('HSET', KEYS[1], 'ban', pack({now, 0, now + ban_for}))
    reply = {0, binding[2], 0, now + ban_for, ban_for, 1, index - 1}
  else
    redis.call('HSET', KEYS[1], 'ban', pack({start, strikes, 0}))
  end
else
  return pack(reply)
end
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return pack(reply)
