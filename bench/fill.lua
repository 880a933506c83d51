-- Fills a cache through it: /item/0 … /item/(FILL_COUNT-1), each asked once, split between
-- wrk's threads (FILL_THREADS); a thread stops once its share is answered, and says so with
-- the file FILL_MARK..id (wrk itself runs for its whole -d, so the caller stops it then).
local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end
function init(args)
  step = tonumber(os.getenv("FILL_THREADS") or "2")
  total = tonumber(os.getenv("FILL_COUNT"))
  next_item = id
  answered = 0
end
function request()
  local path = "/item/" .. next_item
  next_item = next_item + step
  if next_item >= total then next_item = id end
  return wrk.format("GET", path)
end
function response(status, headers, body)
  answered = answered + 1
  if answered * step >= total and not marked then
    marked = true
    io.open(os.getenv("FILL_MARK") .. id, "w"):close()
    wrk.thread:stop()
  end
end
