-- A miss storm: every request a key never asked before (/storm/THREAD-N).
local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end
function init(args)
  n = 0
end
function request()
  n = n + 1
  return wrk.format("GET", "/storm/" .. id .. "-" .. n)
end
