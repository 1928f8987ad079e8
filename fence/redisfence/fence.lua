-- seqd's Redis fence, run by EVALSHA: the Go, Python, Java and JavaScript
-- helpers all run this file.
--
-- KEYS[1] is the fence key, under the prefix below; ARGV[1] the token as
-- 20 zero-padded digits (text of equal length compares as the integers do,
-- over the whole uint64 range: Lua's numbers are doubles, exact only to
-- 2^53). ARGV[2], if given, is a command, with KEYS[2..] its keys (first)
-- and ARGV[3..] its other arguments.
--
-- Answers {1, the command's reply} when admitted; {0, the max} when the
-- token is below the key's max (nothing runs); {2, a sentence} when the
-- command is refused, before anything moves: a command that names a key
-- under the prefix (as COMMAND GETKEYS reads its arguments) could reset a
-- max, and so could a write that names no key (FLUSHDB, FLUSHALL, SWAPDB)
-- or a script. A fence key never keeps a TTL: an expiry would forget its
-- max.
local prefix = 'seqd:fence:'
local function reserved(key)
  return string.sub(key, 1, #prefix) == prefix
end
if not reserved(KEYS[1]) then
  return redis.error_reply('seqd fence: the fence key ' .. KEYS[1] .. ' is not under ' .. prefix)
end
if string.len(ARGV[1]) ~= 20 or not string.match(ARGV[1], '^%d+$') then
  return redis.error_reply('seqd fence: the token is not 20 decimal digits')
end
local cmd
if #ARGV >= 2 then
  cmd = {ARGV[2]}
  for i = 2, #KEYS do cmd[#cmd + 1] = KEYS[i] end
  for i = 3, #ARGV do cmd[#cmd + 1] = ARGV[i] end
  local info = redis.call('COMMAND', 'INFO', cmd[1])[1]
  if not info then
    return {2, 'unknown command ' .. cmd[1]}
  end
  local name = string.lower(info[1])
  local scripts = {eval = 1, evalsha = 1, eval_ro = 1, evalsha_ro = 1, fcall = 1, fcall_ro = 1, ['function'] = 1, script = 1}
  if scripts[name] then
    return {2, 'a fenced command cannot be a script (' .. name .. '): its writes are not known before it runs'}
  end
  local write = false
  for _, flag in ipairs(info[3]) do
    -- a flag is a status reply: a table {ok = name} in Lua
    if flag == 'write' or flag.ok == 'write' then write = true end
  end
  local keys = redis.pcall('COMMAND', 'GETKEYS', unpack(cmd))
  if keys.err then keys = {} end
  if #keys == 0 and write then
    return {2, 'a fenced command cannot be a write that names no key (' .. name .. '): it could reach the fence keys'}
  end
  for _, key in ipairs(keys) do
    if reserved(key) then
      return {2, 'a fenced command cannot name ' .. key .. ': keys under ' .. prefix .. ' hold fence maxes'}
    end
  end
end
local max = redis.call('GET', KEYS[1])
if max then
  if string.len(max) ~= 20 or not string.match(max, '^%d+$') then
    return redis.error_reply('seqd fence: ' .. KEYS[1] .. ' holds no fence max')
  end
  if max > ARGV[1] then
    return {0, max}
  end
  if redis.call('PTTL', KEYS[1]) >= 0 then
    redis.call('PERSIST', KEYS[1])
  end
end
if max ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
end
if not cmd then
  return {1}
end
return {1, redis.call(unpack(cmd))}
