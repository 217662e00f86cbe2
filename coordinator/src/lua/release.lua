-- KEYS[1] lease key; ARGV: "node epoch", leases channel, file. Deletes only our own lease.
local held = redis.call('GET', KEYS[1])
if held and string.match(held, '^%S+ %S+') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], '\n' .. ARGV[3])
  return 1
end
return 0
