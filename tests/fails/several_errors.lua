-- expect: threads = 100: must be one of 64, 128, 256, 512, 1024
-- expect: op = "avg": must be one of
-- expect: unrol = 4: unknown key for family "row_reduce"
-- Every problem is reported at once, not just the first.
return { family = "row_reduce", threads = 100, op = "avg", unrol = 4 }
