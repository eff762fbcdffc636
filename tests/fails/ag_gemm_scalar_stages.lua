-- expect: stages = 6: applies to compute = "wgmma" only; leave it 4
-- The scalar kernels have no shared-memory ring.
return { family = "ag_gemm", variant = "naive_remote", stages = 6 }
