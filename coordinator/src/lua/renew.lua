-- KEYS[1] lease key; ARGV: "node epoch", record lifetime ms, member key prefix.
-- 1 if the lease is still ours and its holder live with the incarnation that took it (the
-- record's lifetime then starts again), else 0.
local held = redis.call('GET', KEYS[1])
if not held then return 0 end
local node, epoch, inc = string.match(held, '^(%S+) (%S+) ?(%S*)$')
if not node or node .. ' ' .. epoch ~= ARGV[1] then return 0 end
local rec = redis.call('GET', ARGV[3] .. node)
if not rec or cjson.decode(rec).inc ~= inc then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
