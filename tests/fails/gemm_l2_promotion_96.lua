-- expect: l2_promotion = 96: "auto" or 0, 64, 128 or 256 (bytes)
-- The tensor map's L2 promotion is one of the driver's four sizes; 96 bytes is none of them.
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 16, n = 128, k = 64 },
         consumers = 1, l2_promotion = 96 }
