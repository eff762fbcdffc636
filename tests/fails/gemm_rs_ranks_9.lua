-- expect: ranks = 9: must be "any" or an integer in 1..8
return { family = "gemm_rs", ranks = 9 }
