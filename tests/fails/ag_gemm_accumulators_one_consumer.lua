-- expect: 128 x 256 over 1 consumer warpgroup(s) is 256 f32 accumulators per thread; at most 128 fit
-- The default tile needs both consumer warpgroups.
return { family = "ag_gemm", variant = "fused", consumers = 1 }
