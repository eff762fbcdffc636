-- expect: min_blocks = 2: leaves no registers for the row with threads = 1024 (32 per thread, 40 for the kernel itself): lower min_blocks or threads
return { family = "rmsnorm", max_cols = 4096, threads = 1024, min_blocks = 2 }
