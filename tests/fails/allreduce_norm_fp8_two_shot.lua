-- expect: quant = "fp8_e4m3": is built for algo = "one_shot" and "one_shot_ll" (two_shot gathers the other ranks' rows of y in dtype)
return { family = "allreduce_norm", max_cols = 4096, algo = "two_shot", quant = "fp8_e4m3" }
