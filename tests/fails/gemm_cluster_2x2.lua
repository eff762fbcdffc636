-- expect: cluster = { m = 2, n = 2 }: a table { m = <CTAs along M>, n = <CTAs along N> }, each 1 or 2, at most 2 CTAs in all (4 CTAs)
-- A 2 x 2 cluster would multicast A along one axis and B along the other; weft's clusters share one operand.
return { family = "gemm", cluster = { m = 2, n = 2 } }
