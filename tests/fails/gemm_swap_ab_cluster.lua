-- expect: cluster = "2x1": swap_ab shares A's rows (the small operand) along N only: cluster = { m = 1, n = 1, 2, 4 or 8 }
-- Swapped, B's rows are the WGMMA's 64-row side: a cluster along M would share B, which each tile reads whole.
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 16, n = 128, k = 64 },
         consumers = 1, cluster = { m = 2, n = 1 } }
