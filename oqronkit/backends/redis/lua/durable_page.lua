-- durable_page.lua: one keyset page of a namespace's index with the rows it points to,
-- read in one atomic step (so a page never comes back short while more rows exist).
--
-- KEYS[1] index  zset  oqron:<p>:<e>:durable:{<p>:<e>:durable}:ins:<table>:<ns>  ins16..id
--                   or oqron:<p>:<e>:durable:{<p>:<e>:durable}:st:<table>:<ns>   st16..id
--                      (every score 0: members sort by their bytes, i.e. by (key, id))
-- KEYS[2] rows   hash  oqron:<p>:<e>:durable:{<p>:<e>:durable}:rows:<table>:<ns>  id -> row
-- ARGV[1] 'asc' or 'desc'
-- ARGV[2] lower bound, ZRANGEBYLEX syntax ('-', '[member', '(member')
-- ARGV[3] upper bound, ZRANGEBYLEX syntax ('+', '[member', '(member')
-- ARGV[4] page size
-- Returns {member, row, member, row, ...} in index order.

local members
if ARGV[1] == 'desc' then
  members = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[3], ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
else
  members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], ARGV[3], 'LIMIT', 0, tonumber(ARGV[4]))
end
local out = {}
for _, member in ipairs(members) do
  local row = redis.call('HGET', KEYS[2], string.sub(member, 17))
  if row then
    out[#out + 1] = member
    out[#out + 1] = row
  end
end
return out
