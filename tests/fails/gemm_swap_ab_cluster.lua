-- expect: swap_ab takes no multicast cluster: cluster = { m = 1, n = 1 }
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 16, n = 128, k = 64 },
         consumers = 1, cluster = { m = 1, n = 2 } }
