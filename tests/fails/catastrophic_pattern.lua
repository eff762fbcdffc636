-- expect: catastrophic_pattern.lua:5: string.find: the pattern
-- expect: at most 1e+09 inside a config: simplify the pattern or shorten the string
-- this find never ended: the count hook does not see time inside C (issue 16, item 7)
local s = string.rep("a", 30)
local hit = s:find(string.rep("a-", 13) .. "b")
return { family = "row_reduce" }
