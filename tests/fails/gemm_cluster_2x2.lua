-- expect: cluster = { m = 2, n = 2 }: a table { m = <CTAs along M>, n = <CTAs along N> }, each 1, 2, 4 or 8, one of them 1 (4 CTAs along both: weft's clusters share one operand)
-- A 2 x 2 cluster would multicast A along one axis and B along the other; weft's clusters share one operand.
return { family = "gemm", cluster = { m = 2, n = 2 } }
