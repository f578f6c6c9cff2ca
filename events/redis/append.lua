-- zhiyi append: idempotency, guards, HLC, XADD and write-side indexes in one atomic step.
-- KEYS[1] stream, KEYS[2] hlc state, KEYS[3] idempotency hash ('' key name when unused),
-- KEYS[4 .. 3+ng] guard keys, then the keys of the index ops in order.
-- ARGV: origin, fingerprint ('' = no idempotency), idem ttl s, result blob, ng, ne,
--   then ng x (field, mode, expected)   mode '=' equals | '!' absent | '+' next version (see below)
--   then ne x one JSON document per event: [[f1, v1, ...], [[k1, v1, ...], ...]]
--   (stream fields without `h`; then the index ops, each an HSET on the next key in KEYS).
--   One argument per event keeps the command small to pack on the client.
-- Mode '+' (one event only): the field must hold an integer; the event was encoded with
--   `"version":expected+1` in its payload. When the field holds another integer (a concurrent write
--   without an expected version got there first), that payload version becomes actual+1 and the
--   field is set to it: a write without an expected version never fails for a version race, and
--   the version it gets is recorded in its event. The reply then carries the version: {'ok', pos, v}.
-- In front of that layout, shifted off first: KEYS[1] the epoch key, ARGV[1] the epoch the caller
-- expects. A missing or different epoch: the log was wiped or replaced; refuse before anything else.
local epoch = redis.call('GET', KEYS[1])
if epoch ~= ARGV[1] then return {'log_reset', epoch or false} end
table.remove(KEYS, 1)
table.remove(ARGV, 1)

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
      -- a write (same value): the caller's WAITAOF then covers the original append too
      redis.call('HSET', KEYS[3], 'f', fingerprint)
      return {'dup', prev[2], prev[3]}
    end
    return {'idem_conflict'}
  end
end

local a = 7
local bump = nil  -- {key index, field, version encoded, version assigned} of a '+' guard
for g = 1, ng do
  local field, mode, expected = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  a = a + 3
  local actual = redis.call('HGET', KEYS[3 + g], field)
  if mode == '!' then
    if actual then return {'guard', g - 1, actual} end
  elseif mode == '+' then
    if not actual or not tonumber(actual) then return {'guard', g - 1, actual or false} end
    bump = {3 + g, field, tonumber(expected) + 1, tonumber(actual) + 1}
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
  if bump and bump[3] ~= bump[4] then
    for i = 1, #fields - 1, 2 do
      if fields[i] == 'd' then
        local needle = '"version":' .. bump[3]
        local s0, s1 = string.find(fields[i + 1], needle, 1, true)
        local after = s1 and string.sub(fields[i + 1], s1 + 1, s1 + 1)
        if not s0 or (after ~= ',' and after ~= '}') then return redis.error_reply('ERR append: no payload version to assign') end
        fields[i + 1] = string.sub(fields[i + 1], 1, s0 - 1) .. '"version":' .. bump[4] .. string.sub(fields[i + 1], s1 + 1)
      end
    end
  end
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
if bump then redis.call('HSET', KEYS[bump[1]], bump[2], bump[4]) end

local joined = table.concat(positions, ',')
if fingerprint ~= '' then
  redis.call('HSET', KEYS[3], 'f', fingerprint, 'r', result, 'p', joined)
  redis.call('EXPIRE', KEYS[3], ttl)
end
if bump then return {'ok', joined, tostring(bump[4])} end
return {'ok', joined}
