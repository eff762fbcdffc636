-- RMS norm of rows up to 4096 bf16 columns (a hidden size of 4096): y = x * rsqrt(mean(x^2) + eps) * w.
-- Measured at 8192 x 4096 on the H200 (bench/auto/rmsnorm_bf16.lua): a row per 128-thread CTA, its
-- 512 vectors 4 to a thread, 38.6 us (0.95 of copy); the sweep's best adds min_blocks = 2 (38.2 us),
-- left out here because it caps the registers of every --set threads = 1024 variant the tests run.
return {
  family = "rmsnorm",
  dtype = "bf16",
  eps = 1e-6,
  max_cols = 4096,
  threads = 128,
  rows_per_cta = 1,
}
