-- expect: rows_per_cta = 8: at most 4 with threads = 128: every row needs a warp or more
return { family = "rmsnorm", max_cols = 64, threads = 128, rows_per_cta = 8 }
