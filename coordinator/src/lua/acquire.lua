-- KEYS[1] lease key, KEYS[2] the file's epoch counter
-- ARGV: node, lease ms, leases channel, file
-- The lease value is "node epoch". Returns {1, epoch} when the lease is ours (taken now, or
-- already ours and extended), {0, holder} when another node holds it.
local held = redis.call('GET', KEYS[1])
if held then
  local sp = string.find(held, ' ', 1, true)
  local holder = string.sub(held, 1, sp - 1)
  if holder ~= ARGV[1] then return {0, holder} end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, string.sub(held, sp + 1)}
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. epoch, 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[1] .. '\n' .. ARGV[4])
return {1, tostring(epoch)}
