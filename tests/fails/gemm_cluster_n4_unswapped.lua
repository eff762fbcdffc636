-- expect: cluster = { m = 1, n = 4 }: at most 2 CTAs per multicast cluster, along M or along N (clusters of 4 or 8, or along both, are swap_ab's: family gemm, b_layout = "col")
-- Unswapped tiles split A's box into each CTA's rows; weft runs them in clusters of at most two.
return { family = "gemm", b_layout = "col", tile = { m = 128, n = 128, k = 64 }, cluster = { m = 1, n = 4 } }
