-- 1,000 distinct places, picked uniformly per request (lat 10.00 … 19.99, one lon), as
-- /weather URLs or, with BENCH_KEYS=pass-through, as the simulator's own URLs.
local format = "/weather?lat=%d.%02d&lon=13.41"
if os.getenv("BENCH_KEYS") == "pass-through" then
  format = "/v1/forecast?latitude=%d.%02d&longitude=13.41&current=temperature_2m,weather_code"
end
local paths = {}
for i = 0, 999 do
  paths[i + 1] = string.format(format, 10 + math.floor(i / 100), i % 100)
end
math.randomseed(os.time())
request = function()
  return wrk.format("GET", paths[math.random(1, 1000)])
end
