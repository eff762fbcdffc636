-- expect: infinite_loop.lua:4: config ran for more than 10000000 instructions: does it loop forever?
local n = 0
while true do
  n = n + 1
end
return { family = "row_reduce", threads = n }
