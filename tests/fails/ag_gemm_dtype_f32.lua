-- expect: dtype = "f32": must be one of "f16", "bf16"
-- WGMMA and the 16-byte shard copies are written for 16-bit elements.
return { family = "ag_gemm", dtype = "f32" }
