-- expect: min_blocks = 2: leaves no registers for the row with threads = 512 (64 per thread, 96 for the kernel itself)
-- one_shot_ll's slots keep 8 ranks' loads in flight: a known world size does not make it fit 64 registers.
return { family = "allreduce_norm", max_cols = 4096, algo = "one_shot_ll", ranks = 4, min_blocks = 2 }
