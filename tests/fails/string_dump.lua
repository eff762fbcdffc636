-- expect: string_dump.lua:3: attempt to call a nil value (field 'dump')
-- string.dump was reachable through a string's methods (issue 16, item 7)
local code = ("").dump(function() end)
return { family = "row_reduce" }
