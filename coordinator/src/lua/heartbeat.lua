-- KEYS[1] member key; ARGV: draining (0/1), lease ms, members channel
-- Returns 0 when the record has lapsed (the node must join again), else 1.
local old = redis.call('GET', KEYS[1])
if not old then return 0 end
local rec = cjson.decode(old)
local draining = ARGV[1] == '1'
if rec.draining == draining then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  rec.draining = draining
  redis.call('SET', KEYS[1], cjson.encode(rec), 'PX', ARGV[2])
  redis.call('PUBLISH', ARGV[3], rec.id)
end
return 1
