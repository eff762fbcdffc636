-- expect: consumers = 3: swap_ab splits B's rows over 1 or 2 consumer warpgroups
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 64, n = 192, k = 64 },
         consumers = 3 }
