-- expect: max_cols = 5120: needs 10 16-byte vectors per thread (120 registers: the row and w, and r while h is formed)
-- expect: at most 7 fit (max_cols <= 3584)
return { family = "rmsnorm", dtype = "f16", residual = true, max_cols = 5120, threads = 512, rows_per_cta = 8 }
