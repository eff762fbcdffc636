-- expect: family = nil: must be one of "ag_gemm", "all_gather", "allreduce", "allreduce_norm", "cluster_reduce"
-- No family at all.
return { dtype = "f32", op = "sum", threads = 256 }
