-- expect: the config must return a table, it returned nothing
local cfg = { family = "row_reduce" }
