-- expect: epilogue = "tma": applies to compute = "wgmma" only; leave it "direct"
-- The seed's scalar kernels store C with threads; only the WGMMA kernels stage it for TMA.
return { family = "ag_gemm", variant = "threadload_gather", epilogue = "tma" }
