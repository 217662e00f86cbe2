-- KEYS[1] lease key; ARGV: "node epoch", lease ms. 1 if still ours (and extended), else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
