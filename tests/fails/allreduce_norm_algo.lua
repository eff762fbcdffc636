-- expect: algo = "ring": must be one of "one_shot", "two_shot", "one_shot_ll"
return { family = "allreduce_norm", max_cols = 4096, algo = "ring" }
