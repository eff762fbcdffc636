-- expect: eps = -1e-06: must be a number in 0..1 (added to mean(x^2) before the rsqrt), or "arg" (an f32 kernel argument)
return { family = "rmsnorm", max_cols = 4096, eps = -1e-6 }
