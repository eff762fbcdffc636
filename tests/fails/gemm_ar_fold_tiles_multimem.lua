-- expect: fold = "tiles": fold = "tiles" is built for comm = "threadload"
return { family = "gemm_ar", fold = "tiles", comm = "multimem", fallback = "emulate" }
