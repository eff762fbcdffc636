-- expect: split_k = 4: split-K's cluster is its CTAs along K; leave cluster = { m = 1, n = 1 } (no multicast with it)
-- A split-K cluster is its CTAs along K; a multicast cluster shares A or B across tiles: not both.
return { family = "gemm", split_k = 4, cluster = { n = 2 }, tile = { m = 64, n = 128, k = 64 }, consumers = 1 }
