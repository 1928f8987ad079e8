-- A control for the Redis cases (rediscases.json): the fence script as it was
-- before its guards, which checks no command and leaves a fence key's TTL.
local max = redis.call('GET', KEYS[1])
if max then
  if string.len(max) ~= 20 or not string.match(max, '^%d+$') then
    return redis.error_reply('seqd fence: ' .. KEYS[1] .. ' holds no fence max')
  end
  if max > ARGV[1] then
    return {0, max}
  end
end
if max ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
end
if #ARGV < 2 then
  return {1}
end
local args = {ARGV[2]}
for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
return {1, redis.call(unpack(args))}
