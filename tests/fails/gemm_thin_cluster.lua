-- expect: cluster = { m = 2, n = 1 }: a tile under 64 rows takes no multicast cluster: cluster = { m = 1, n = 1 }
return { family = "gemm", b_layout = "col", tile = { m = 16, n = 80, k = 64 }, consumers = 1, cluster = { m = 2, n = 1 } }
