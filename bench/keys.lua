-- 1,000 distinct places, picked uniformly per request (lat 10.00 … 19.99, one lon).
local paths = {}
for i = 0, 999 do
  paths[i + 1] = string.format("/weather?lat=%d.%02d&lon=13.41", 10 + math.floor(i / 100), i % 100)
end
math.randomseed(os.time())
request = function()
  return wrk.format("GET", paths[math.random(1, 1000)])
end
