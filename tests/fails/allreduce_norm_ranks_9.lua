-- expect: ranks = 9: must be "any" or an integer in 1..8 (the world size the kernel is generated for)
return { family = "allreduce_norm", max_cols = 4096, ranks = 9 }
