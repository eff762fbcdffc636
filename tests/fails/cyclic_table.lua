-- expect: cyclic_table.lua: op.again refers back to op (a cyclic table): a config must be a tree of values
-- a cycle used to overflow the generator's stack and read as "a bug in weft" (issue 16, item 9)
local op = { combine = "a + b", identity = "0" }
op.again = op
return { family = "row_reduce", op = op }
