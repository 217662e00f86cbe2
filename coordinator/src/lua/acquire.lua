-- KEYS[1] lease key, KEYS[2] the file's epoch counter
-- ARGV: node, record lifetime ms, leases channel, file, member key prefix
-- The lease value is "node epoch incarnation": held while that node is live with that
-- incarnation. Returns {1, epoch} when the lease is ours (taken now, or already ours),
-- {0, holder} when another live node holds it, {-1, ''} when the node is not a member.
local prefix = ARGV[5]
local function inc_of(id)
  local rec = redis.call('GET', prefix .. id)
  return rec and cjson.decode(rec).inc or false
end
local mine = inc_of(ARGV[1])
if not mine then return {-1, ''} end
local held = redis.call('GET', KEYS[1])
if held then
  local node, epoch, inc = string.match(held, '^(%S+) (%S+) ?(%S*)$')
  if node and inc_of(node) == inc then
    if node ~= ARGV[1] then return {0, node} end
    return {1, epoch}
  end
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. epoch .. ' ' .. mine, 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[1] .. '\n' .. ARGV[4])
return {1, tostring(epoch)}
