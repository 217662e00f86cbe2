-- KEYS[1] member index set; ARGV[1] member key prefix
-- Returns the live records; ids whose record lapsed leave the index on the way.
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local rec = redis.call('GET', ARGV[1] .. id)
  if rec then out[#out + 1] = rec else redis.call('SREM', KEYS[1], id) end
end
return out
