-- expect: cluster = 16: must be at most 8; up to 16 needs nonportable = true
return { family = "rmsnorm", max_cols = 65536, cluster = 16, rows_per_cta = 1 }
