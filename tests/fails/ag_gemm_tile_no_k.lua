-- expect: tile = { m = 128, n = 256 }: "auto" or a table { m = <rows>, n = <cols>, k = <depth> } of integers (k is missing or not a positive integer)
return { family = "ag_gemm", tile = { m = 128, n = 256 } }
