-- expect: fallback = "emulate": only comm = "multimem" has a fallback
return { family = "gemm_rs", fallback = "emulate" }
