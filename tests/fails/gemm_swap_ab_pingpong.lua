-- expect: mma = "pingpong": swap_ab has the cooperative main loop: mma = "cooperative"
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 16, n = 128, k = 64 },
         consumers = 2, mma = "pingpong" }
