-- expect: max_cols = 65536: needs 16 16-byte vectors per thread (192 registers: the row, w, and r while h is formed) with cluster = 1, threads = 512, rows_per_cta = 1; at most 2 fit (max_cols <= 8192): raise cluster or threads, or lower rows_per_cta
return { family = "allreduce_norm", dtype = "bf16", max_cols = 65536 }
