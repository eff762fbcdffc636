-- expect: (m is missing or not a positive integer)
return { family = "gemm", tile = { m = 127.5, n = 256, k = 64 } }
