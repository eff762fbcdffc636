-- expect: min_blocks = 4: with threads = 1024 at most 2 CTAs fit on an SM (2048 threads)
return { family = "row_reduce", threads = 1024, min_blocks = 4 }
