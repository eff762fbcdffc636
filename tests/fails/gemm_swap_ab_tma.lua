-- expect: swap_ab stores C (transposed) from the accumulators: epilogue = "direct"
-- The swapped accumulators hold C^T; there is no transposing TMA epilogue.
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "tma", tile = { m = 16, n = 64, k = 64 },
         consumers = 1 }
