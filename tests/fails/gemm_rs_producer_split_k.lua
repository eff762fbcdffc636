-- expect: reducer = "producer": split_k = 2: the producer's warps fold the tiles of an unsplit walk
return { family = "gemm_rs", fold = "tiles", reducer = "producer", split_k = 2, tile = { m = 128, n = 128, k = 64 } }
