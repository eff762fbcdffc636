-- expect: variant = "allgather": must be one of "gemm", "naive_remote", "threadload_gather", "multimem_gather", "gather_then_gemm", "fused"
return { family = "ag_gemm", variant = "allgather" }
