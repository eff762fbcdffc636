-- expect: stream_k = true: stream-K's CTAs take k-blocks of their own, not a shared tile
-- A multicast cluster shares one operand between CTAs that walk the same tiles; stream-K's CTAs do not.
return { family = "gemm", stream_k = true, cluster = { m = 2, n = 1 } }
