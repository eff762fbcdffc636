-- expect: --set op.combine=a + b: op is a string, not a table
-- set: op.combine=a + b
return { family = "row_reduce", op = "sum" }
