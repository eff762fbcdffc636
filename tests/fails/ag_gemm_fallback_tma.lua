-- expect: fallback = "emulate": only comm = "multimem" has a fallback
return { family = "ag_gemm", variant = "fused", comm = "tma", fallback = "emulate" }
