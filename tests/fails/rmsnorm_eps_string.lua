-- expect: eps = "config": must be a number in 0..1
-- expect: residual = "yes": must be true or false
-- Every problem is reported at once.
return { family = "rmsnorm", max_cols = 4096, eps = "config", residual = "yes" }
