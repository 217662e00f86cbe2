-- KEYS[1] member key, KEYS[2] member index set
-- ARGV: id, address, draining (0/1), lease ms, fresh incarnation, members channel
-- Returns 1 when this join began a new incarnation, 0 when the node was live already.
local old = redis.call('GET', KEYS[1])
local inc = ARGV[5]
if old then inc = cjson.decode(old).inc end -- joining again while live keeps slots and leases
local rec = cjson.encode({id = ARGV[1], address = ARGV[2], draining = ARGV[3] == '1', inc = inc})
redis.call('SET', KEYS[1], rec, 'PX', ARGV[4])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[6], ARGV[1])
if old then return 0 end
return 1
