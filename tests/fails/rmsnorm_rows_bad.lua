-- expect: rows_per_cta = 3: must be one of 1, 2, 4, 8, 16, 32 or "auto"
return { family = "rmsnorm", max_cols = 64, rows_per_cta = 3 }
