-- Time inside C functions, which the instruction hook does not see: the wall-clock cap stops it
-- (cli.time_cap runs it with WEFT_CONFIG_SECONDS=1).
local n = 0
for i = 1, 1e7 do n = n + #string.rep("x", 1 << 22) end
return { family = "row_reduce" }
