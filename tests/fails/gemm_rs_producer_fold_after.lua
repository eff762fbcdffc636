-- expect: reducer = "producer": the producer's warps fold tile by tile: fold = "tiles"
return { family = "gemm_rs", reducer = "producer" }
