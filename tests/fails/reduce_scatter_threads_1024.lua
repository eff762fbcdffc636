-- expect: threads = 1024: must be one of 64, 128, 256, 512
return { family = "reduce_scatter", threads = 1024 }
