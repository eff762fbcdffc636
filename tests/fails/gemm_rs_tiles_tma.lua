-- expect: fold = "tiles": fold = "tiles" flags each tile after its thread stores
return { family = "gemm_rs", fold = "tiles", comm = "tma" }
