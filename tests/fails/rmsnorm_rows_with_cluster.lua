-- expect: rows_per_cta = 4: must be 1 (or "auto") with cluster = 2: a row split across a cluster takes its CTAs whole
return { family = "rmsnorm", max_cols = 8192, cluster = 2, rows_per_cta = 4 }
