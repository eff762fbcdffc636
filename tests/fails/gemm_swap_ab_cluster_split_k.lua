-- expect: split_k = 2: split-K's cluster is its CTAs along K; with cluster = { m = 1, n = 4 } leave split_k = 1 (no multicast with it)
-- A swapped tile shares A over a cluster along N or splits K over one, not both.
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 72, n = 64, k = 64 },
         consumers = 1, cluster = { m = 1, n = 4 }, split_k = 2 }
