-- A cyclic sweep (cli.sweep_cyclic): named, not "a bug in weft".
local op = { combine = "a + b", identity = "0" }
op.again = op
return { base = { family = "row_reduce", op = op }, space = { threads = { 256 } }, shapes = { { rows = 1, cols = 1 } } }
