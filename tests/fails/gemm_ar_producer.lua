-- expect: reducer = "producer"
return { family = "gemm_ar", fold = "tiles", reducer = "producer" }
