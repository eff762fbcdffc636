-- expect: consumers = 1: applies to compute = "wgmma" only; leave it 2
-- expect: group = 8: applies to compute = "wgmma" only; leave it 16
return { family = "ag_gemm", variant = "multimem_gather", consumers = 1, group = 8 }
