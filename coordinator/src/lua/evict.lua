-- KEYS[1] member key, KEYS[2] member index set; ARGV: id, address, members channel
-- Returns 1 when it ended the membership; 0 when the record is gone, carries another address
-- (the node came back elsewhere) or is draining.
local old = redis.call('GET', KEYS[1])
if not old then return 0 end
local rec = cjson.decode(old)
if rec.address ~= ARGV[2] or rec.draining then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
