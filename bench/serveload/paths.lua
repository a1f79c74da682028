-- wrk script for bench/serveload/wrk.sh: every connection sends the paths
-- of the file $SERVELOAD_PATHS (one per line, written by serveload
-- --paths), each thread starting at its own place in the list, so the mix
-- is serveload's (zipf, uniform or unique queries).
local file = os.getenv("SERVELOAD_PATHS")
local paths = {}
for line in io.lines(file) do
  paths[#paths + 1] = line
end
if #paths == 0 then
  error("no paths in " .. file .. ": write them with serveload --paths")
end

local threads = 0
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

local i = 0
function init(args)
  i = math.floor(id * #paths / math.max(threads, 1))
end

function request()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end

-- Answers other than 200 are counted by wrk ("Non-2xx or 3xx responses").
