-- expect: split_k = 2: split-K's cluster is its CTAs along K; leave cluster = { m = 1, n = 1 } (no multicast with it)
-- A cluster is two CTAs: they either share a multicast tile or split K, not both.
return { family = "ag_gemm", variant = "fused", tile = { m = 128, n = 128, k = 64 }, cluster = { m = 2 }, split_k = 2 }
