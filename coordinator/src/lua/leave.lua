-- KEYS[1] member key, KEYS[2] member index set; ARGV: id, members channel
if redis.call('DEL', KEYS[1]) == 1 then redis.call('PUBLISH', ARGV[2], ARGV[1]) end
redis.call('SREM', KEYS[2], ARGV[1])
return 1
