-- expect: cluster = { m = 1, n = 3 }: a table { m = <CTAs along M>, n = <CTAs along N> }, each 1, 2, 4 or 8 (n is not 1, 2, 4 or 8)
-- The multicast mask and the GPC's cluster slots take powers of two.
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 72, n = 64, k = 64 },
         consumers = 1, cluster = { m = 1, n = 3 } }
