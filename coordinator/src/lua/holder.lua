-- KEYS[1] lease key; ARGV[1] member key prefix.
-- The holder's id while it is live with the incarnation that took the lease, else false.
local held = redis.call('GET', KEYS[1])
if not held then return false end
local node, _, inc = string.match(held, '^(%S+) (%S+) ?(%S*)$')
if not node then return false end
local rec = redis.call('GET', ARGV[1] .. node)
if rec and cjson.decode(rec).inc == inc then return node end
return false
