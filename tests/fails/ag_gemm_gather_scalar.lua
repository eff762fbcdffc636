-- expect: compute = "scalar": variant = "gather_then_gemm" computes with wgmma
-- expect: tensor cores; the scalar kernels are naive_remote, threadload_gather and multimem_gather
return { family = "ag_gemm", variant = "gather_then_gemm", compute = "scalar" }
