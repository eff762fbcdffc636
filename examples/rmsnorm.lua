-- RMS norm of rows up to 4096 bf16 columns (a hidden size of 4096): y = x * rsqrt(mean(x^2) + eps) * w.
-- Two rows per 256-thread CTA, so each row's 512 vectors sit 4 to a thread in registers.
return {
  family = "rmsnorm",
  dtype = "bf16",
  eps = 1e-6,
  max_cols = 4096,
  threads = 256,
  rows_per_cta = 2,
}
