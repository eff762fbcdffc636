-- expect: cluster = { m = 4, n = 4 }: a table { m = <CTAs along M>, n = <CTAs along N> }, each 1, 2, 4 or 8 (16 CTAs in all: a cluster holds at most 8)
-- A swapped tile shares B along M and A along N, but a cluster is at most 8 CTAs (the portable limit).
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 40, n = 64, k = 64 },
         consumers = 1, cluster = { m = 4, n = 4 } }
