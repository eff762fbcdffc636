-- expect: threads = 1024: leaves no registers for the row with threads = 1024 (64 per thread, 96 for the kernel itself)
-- 1024 threads get 64 registers each; the fold's loads in flight and the norm need more than that.
return { family = "allreduce_norm", max_cols = 4096, threads = 1024 }
