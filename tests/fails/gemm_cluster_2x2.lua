-- expect: cluster = { m = 2, n = 2 }: at most 2 CTAs per multicast cluster, along M or along N (clusters of 4 or 8, or along both, are swap_ab's: family gemm, b_layout = "col")
-- Unswapped tiles share one operand over a cluster of two; a 2 x 2 cluster (B along M and A along N) is swap_ab's.
return { family = "gemm", cluster = { m = 2, n = 2 } }
