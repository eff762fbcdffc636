-- expect: quant = "int8": must be one of "none", "fp8_e4m3"
return { family = "allreduce_norm", max_cols = 4096, quant = "int8" }
