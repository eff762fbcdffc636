-- expect: swap_ab
-- swap_ab is family gemm's alone: the fused kernels keep A's rows as the WGMMA's 64-row side.
return { family = "ag_gemm", variant = "fused", b_layout = "col", swap_ab = true }
