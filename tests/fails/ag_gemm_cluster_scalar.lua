-- expect: cluster = { m = 2, n = 1 }: applies to compute = "wgmma" only (TMA multicast); leave it { m = 1, n = 1 }
-- The seed's scalar kernels load with threads, not TMA: there is nothing to multicast.
return { family = "ag_gemm", variant = "naive_remote", cluster = { m = 2 } }
