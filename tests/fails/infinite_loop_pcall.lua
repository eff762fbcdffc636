-- expect: config ran for more than 10000000 instructions: does it loop forever?
-- The instruction limit is an error raised by a hook; the sandbox's pcall must not be able
-- to swallow it and keep going.
while true do
  pcall(function() while true do end end)
end
return { family = "row_reduce" }
