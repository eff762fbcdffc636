-- expect: swap_ab reads B's rows as the WGMMA's A operand: set b_layout = "col"
-- Row-major B (K x N) has no K-major rows to serve as the WGMMA's 64-row A operand.
return { family = "gemm", b_layout = "row", swap_ab = true, epilogue = "direct", tile = { m = 16, n = 64, k = 64 },
         consumers = 1 }
