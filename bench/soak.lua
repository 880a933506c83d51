-- make soak: half hot-key memory hits, three tenths weather misses over a key space far
-- larger than the cache, one fifth pass-through requests over 1,000 keys. Every answer
-- that is not 200 (or 304) is an error; each wrk thread counts its own, summed at the end.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  errors = 0
  math.randomseed(os.time() + math.random(1, 1000000))
end

request = function()
  local r = math.random()
  if r < 0.5 then
    return wrk.format("GET", "/weather?lat=52.52&lon=13.41")
  elseif r < 0.8 then
    return wrk.format("GET", string.format("/weather?lat=%.2f&lon=%.2f", math.random(-8999, 8999) / 100, math.random(-17999, 17999) / 100))
  else
    return wrk.format("GET", string.format("/v1/forecast?latitude=%d.%02d&longitude=13.41&current=temperature_2m,weather_code",
      10 + math.random(0, 9), math.random(0, 99)))
  end
end

response = function(status, headers, body)
  if status ~= 200 and status ~= 304 then errors = errors + 1 end
end

done = function(summary, latency, requests)
  local counted = 0
  for _, thread in ipairs(threads) do counted = counted + thread:get("errors") end
  local e = summary.errors
  io.write(string.format("soak: %d requests, %d answers other than 200, %d socket errors (connect %d, read %d, write %d, timeout %d)\n",
    summary.requests, counted, e.connect + e.read + e.write + e.timeout, e.connect, e.read, e.write, e.timeout))
end
