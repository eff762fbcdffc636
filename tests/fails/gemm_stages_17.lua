-- expect: stages = 17: must be an integer in 2..16
return { family = "gemm", stages = 17 }
