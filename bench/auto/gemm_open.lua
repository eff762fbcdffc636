-- weft's GEMM with every schedule knob open: `weft suggest` / `weft run --auto` choose tile,
-- stages, consumers, mma, cluster, split_k, epilogue, group and pdl per shape
-- (gen/core/gemm.lua's rule).  bf16, B column-major (a linear layer's weight), as the sweep
-- bench/auto/gemm_shapes.lua it is checked against.
return { family = "gemm", dtype = "bf16", b_layout = "col" }
