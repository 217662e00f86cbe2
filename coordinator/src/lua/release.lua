-- KEYS[1] lease key; ARGV: "node epoch", leases channel, file. Deletes only our own lease.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], '\n' .. ARGV[3])
  return 1
end
return 0
