-- expect: max_cols = 65536: needs 16 16-byte vectors per thread (128 registers: the row and w) with cluster = 1, threads = 1024, rows_per_cta = 1
-- expect: at most 3 fit (max_cols <= 12288): raise cluster or threads, or lower rows_per_cta
return { family = "rmsnorm", dtype = "f32", max_cols = 65536, threads = 1024, rows_per_cta = 1 }
