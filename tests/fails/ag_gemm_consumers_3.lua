-- expect: consumers = 3: must be one of 1, 2
return { family = "ag_gemm", consumers = 3 }
