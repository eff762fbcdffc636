-- expect: cluster = { x = 2 }: a table { m = <CTAs along M>, n = <CTAs along N> }, each 1, 2, 4 or 8 (unknown key x)
-- The cluster is spelled in the GEMM's own axes: m (CTAs sharing a B tile) and n (sharing an A tile).
return { family = "ag_gemm", variant = "fused", cluster = { x = 2 } }
