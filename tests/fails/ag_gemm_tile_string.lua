-- expect: tile = "big": "auto" or a table { m = <rows>, n = <cols>, k = <depth> } of integers
return { family = "ag_gemm", tile = "big" }
