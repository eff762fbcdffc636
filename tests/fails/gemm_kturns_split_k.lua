-- expect: split_k = 2: mma = "kturns" sums its two halves of K inside the CTA: split_k = 1
return { family = "gemm", b_layout = "col", tile = { m = 64, n = 64, k = 64 }, consumers = 2, mma = "kturns", split_k = 2 }
