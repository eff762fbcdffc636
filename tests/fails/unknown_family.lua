-- expect: family = "row_reduc": must be one of "ag_gemm", "all_gather", "allreduce", "allreduce_norm", "cluster_reduce"
-- A typo in the family name.
return { family = "row_reduc", threads = 256 }
