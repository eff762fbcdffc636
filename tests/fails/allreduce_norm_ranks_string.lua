-- expect: ranks = "two": must be "any" or an integer in 1..8
return { family = "allreduce_norm", max_cols = 4096, ranks = "two" }
