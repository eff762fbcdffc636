-- expect: max_cols = 4000000: needs 3907 16-byte vectors (15628 registers) per thread with cluster = 1, threads = 256
-- expect: (max_cols <= 32768)
-- expect: or use mode = "stream"
return { family = "row_softmax", mode = "onchip", max_cols = 4000000, cluster = 1, threads = 256 }
