-- durable_page.lua: one keyset page of a namespace's index with the rows it points to,
-- read in one atomic step (so a page never comes back short while more rows exist).
--
-- B = oqron:<p>:<e>:durable:{<p>:<e>:durable}:
-- KEYS[1] index  zset  one of (every score 0, so members sort by their bytes: (key, id))
--                      B ins:<table>:<ns>                                   ins16..id
--                      B st:<table>:<ns>                                    st16..id
--                      B fx:<table>:<i|s>:<field>:<byte length of ns>:<ns>:<value>
--                                                                 ins16..id or st16..id
-- KEYS[2] rows   hash  B rows:<table>:<ns>   id -> row
-- ARGV[1] 'asc' or 'desc'
-- ARGV[2] lower bound, ZRANGEBYLEX syntax ('-', '[member', '(member')
-- ARGV[3] upper bound, ZRANGEBYLEX syntax ('+', '[member', '(member')
-- ARGV[4] page size
-- Returns {member, row, member, row, ...} in index order ('' for a row that is missing,
-- which the writes never leave behind).

local members
if ARGV[1] == 'desc' then
  members = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[3], ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
else
  members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], ARGV[3], 'LIMIT', 0, tonumber(ARGV[4]))
end
local out = {}
for _, member in ipairs(members) do
  out[#out + 1] = member
  out[#out + 1] = redis.call('HGET', KEYS[2], string.sub(member, 17)) or ''
end
return out
