-- KEYS[1] counter hash, fields "node incarnation" -> slots
-- ARGV: member key prefix, mode ('up', 'down' or 'count'), node, limit
-- up: -1 if the node is not a live member, 0 at the limit, 1 when a slot was taken.
-- down: gives one of the node's slots back. count: the live total.
-- Fields of nodes whose membership lapsed (or whose incarnation changed) are dropped as
-- they are met, so their slots stop counting at once.
local prefix, mode, node = ARGV[1], ARGV[2], ARGV[3]
local incs = {}
local function inc_of(id)
  if incs[id] == nil then
    local rec = redis.call('GET', prefix .. id)
    incs[id] = rec and cjson.decode(rec).inc or false
  end
  return incs[id]
end
local mine = nil
if mode ~= 'count' then
  mine = inc_of(node)
  if not mine then
    if mode == 'up' then return -1 end
    return 0
  end
end
local field = mine and (node .. ' ' .. mine)
if mode == 'down' then
  if redis.call('HINCRBY', KEYS[1], field, -1) <= 0 then redis.call('HDEL', KEYS[1], field) end
  return 1
end
local total = 0
local flat = redis.call('HGETALL', KEYS[1])
for i = 1, #flat, 2 do
  local f = flat[i]
  local sp = string.find(f, ' ', 1, true)
  if sp and inc_of(string.sub(f, 1, sp - 1)) == string.sub(f, sp + 1) then
    total = total + tonumber(flat[i + 1])
  else
    redis.call('HDEL', KEYS[1], f)
  end
end
if mode == 'count' then return total end
if total >= tonumber(ARGV[4]) then return 0 end
redis.call('HINCRBY', KEYS[1], field, 1)
return 1
