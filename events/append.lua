-- zhiyi append: idempotency, guards, HLC, XADD and write-side indexes in one atomic step.
-- KEYS[1] stream, KEYS[2] hlc state, KEYS[3] idempotency hash ('' key name when unused),
-- KEYS[4 .. 3+ng] guard keys, then the keys of the index ops in order.
-- ARGV: origin, fingerprint ('' = no idempotency), idem ttl s, result blob, ng, ne,
--   then ng x (field, mode, expected)   mode '=' equals | '!' absent
--   then ne x one JSON document per event: [[f1, v1, ...], [[k1, v1, ...], ...]]
--   (stream fields without `h`; then the index ops, each an HSET on the next key in KEYS).
--   One argument per event keeps the command small to pack on the client.
local origin = ARGV[1]
local fingerprint = ARGV[2]
local ttl = tonumber(ARGV[3])
local result = ARGV[4]
local ng = tonumber(ARGV[5])
local ne = tonumber(ARGV[6])

if fingerprint ~= '' then
  local prev = redis.call('HMGET', KEYS[3], 'f', 'r', 'p')
  if prev[1] then
    if prev[1] == fingerprint then
      return {'dup', prev[2], prev[3]}
    end
    return {'idem_conflict'}
  end
end

local a = 7
for g = 1, ng do
  local field, mode, expected = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  a = a + 3
  local actual = redis.call('HGET', KEYS[3 + g], field)
  if mode == '!' then
    if actual then return {'guard', g - 1, actual} end
  elseif actual ~= expected then
    return {'guard', g - 1, actual or false}
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local st = redis.call('HMGET', KEYS[2], 'w', 'c')
local w = tonumber(st[1]) or 0
local c = tonumber(st[2]) or 0

local positions = {}
local k = 4 + ng
for e = 1, ne do
  if now > w then w = now; c = 0 else c = c + 1 end
  local doc = cjson.decode(ARGV[a]); a = a + 1
  local fields = doc[1]
  fields[#fields + 1] = 'h'
  fields[#fields + 1] = w .. ':' .. c .. ':' .. origin
  local pos = redis.call('XADD', KEYS[1], '*', unpack(fields))
  positions[#positions + 1] = pos
  for _, kv in ipairs(doc[2]) do
    redis.call('HSET', KEYS[k], unpack(kv))
    k = k + 1
  end
end
redis.call('HSET', KEYS[2], 'w', w, 'c', c)

local joined = table.concat(positions, ',')
if fingerprint ~= '' then
  redis.call('HSET', KEYS[3], 'f', fingerprint, 'r', result, 'p', joined)
  redis.call('EXPIRE', KEYS[3], ttl)
end
return {'ok', joined}
