-- expect: stages = 9: must be an integer in 2..8
return { family = "gemm", stages = 9 }
